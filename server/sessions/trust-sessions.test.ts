import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayTarget } from '../../agent/renew/gateway-client';
import { loadIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import type { ServerEvent } from '../../agent/session/sse';
import { verifyEnvelope } from '../../protocol/envelope';
import { SESSION_REFUSED } from '../../protocol/session-wire';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { mintToken } from '../../test/join-harness';
import { helloOverH2, type RawHello } from '../../test/node-connection';
import { anotherGateway, createRenewHarness, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import type { GatewayServer } from '../gateway/gateway';
import type { PkiRuntime } from '../join/join-runtime';
import { getNode } from '../nodes/nodes';
import type { JoinCrypto } from '../pki/issuance/join-crypto';
import { trustStateOf, type TrustSetBody } from '../pki/rotation/trust-state';
import { deliverTrust } from './trust-delivery';

// Sessions carry the trust set (protocol.md "Sessions", "Trust rotation") through real gateways in front of
// the agent endpoints on the test PostgreSQL, with a PKI source the test swaps as a rotation step would.

/** A PKI source whose runtime the test replaces, telling its listeners as PkiSource.onChange does. */
class SwappablePki {
  private readonly listeners: Array<(runtime: PkiRuntime) => void> = [];
  runtime!: PkiRuntime;
  load = async () => this.runtime;
  loadCrypto = async () => this.runtime.crypto;
  onChange(listener: (runtime: PkiRuntime) => void) {
    this.listeners.push(listener);
    return () => void this.listeners.splice(this.listeners.indexOf(listener), 1);
  }
  /** The same keys at trust version `version`. */
  bump(version: number) {
    this.runtime = { ...this.runtime, trust: { ...trustStateOf(this.runtime), version } };
    for (const listener of this.listeners) listener(this.runtime);
  }
}

const pki = new SwappablePki();
let r: RenewHarness;
let second: GatewayServer;
let secondTarget: GatewayTarget;
let signingKey: X509Certificate['publicKey'];
let t: TestTenant;

beforeAll(async () => {
  r = await createRenewHarness({
    pki: (crypto: JoinCrypto, servingCaPin: string) => {
      pki.runtime = { crypto, servingCaPin };
      return pki;
    },
  });
  signingKey = new X509Certificate(r.h.trust.signingCertificateDer).publicKey;
  // A second gateway process of the same deployment, in front of the same API.
  ({ gateway: second, target: secondTarget } = await anotherGateway(r));
  t = await createTestTenant(testDb());
});
afterAll(async () => {
  await second?.shutdown();
  await r?.close();
});

async function joined() {
  const { dir, answer } = await joinThroughGateway(r, (await mintToken(t, { maxUses: 1 })).token!);
  return { nodeId: answer.nodeId, identity: await loadIdentity(dir) };
}

const helloWith = (identity: LoadedIdentity, hello: object, target: GatewayTarget = r.target) => helloOverH2(target, identity, hello);

const types = (s: RawHello) => s.events.map((e) => e.type);
const trustEvents = (s: RawHello) => s.events.filter((e) => e.type === 'trust');
const trustBody = (event: ServerEvent) => verifyEnvelope(event.data as { body: string; sig: string }, signingKey) as TrustSetBody;
const recorded = (nodeId: string) =>
  testDb().node.findUniqueOrThrow({ where: { id: nodeId }, select: { trustVersion: true, trustVersionAt: true } });

describe('Hello and the trust set', () => {
  it('an agent that holds an older trust set hears the server’s right after its welcome; the node records it', async () => {
    pki.bump(3);
    const { nodeId, identity } = await joined();
    expect((await recorded(nodeId)).trustVersion).toBeNull();
    const before = new Date(Date.now() - 1_000);
    const session = await helloWith(identity, { nodeId, agentVersion: '0.2.0', trustVersion: 2, commandKinds: ['bcd.doctor'] });
    expect(session.status).toBe(200);
    await expect.poll(() => session.events.length >= 2, { timeout: 5_000 }).toBe(true);
    expect(types(session).slice(0, 2)).toEqual(['welcome', 'trust']);
    const body = trustBody(session.events[1]!);
    const trust = trustStateOf(pki.runtime);
    expect(body).toEqual({
      status: 'trust',
      nodeId,
      version: 3,
      servingCaPins: [r.servingCaPin],
      joinSigningKeyPins: [r.h.crypto.signingKeyPin],
      joinEncryptionKeyPins: [r.h.crypto.encryptionKeyPin],
      joinEncryptionJwks: [r.h.crypto.encryptionPublicJwk],
      commandTrustBundle: trust.commandTrustBundle,
    });
    const row = await recorded(nodeId);
    expect(row.trustVersion).toBe(3);
    expect(row.trustVersionAt!.getTime()).toBeGreaterThan(before.getTime());
    // What the node page shows.
    expect(await getNode(testDb(), t.viewer, { tenantId: t.tenantId, nodeId })).toMatchObject({
      trustVersion: 3,
      trustVersionAt: row.trustVersionAt!.toISOString(),
    });

    // A Hello with no trustVersion holds none: it hears the set too.
    const none = await helloWith(identity, { nodeId, agentVersion: '0.1.0' });
    await expect.poll(() => types(none).slice(0, 2), { timeout: 5_000 }).toEqual(['welcome', 'trust']);
    expect(trustBody(none.events[1]!)).toMatchObject({ nodeId, version: 3 });
    session.close();
    none.close();
  });

  it('an agent that holds the current trust set hears no trust event; its version is recorded', async () => {
    pki.bump(4);
    const { nodeId, identity } = await joined();
    const session = await helloWith(identity, { nodeId, agentVersion: '0.2.0', trustVersion: 4 });
    expect(session.status).toBe(200);
    // Heartbeats every second: two of them, and lease calls meanwhile, and still no trust event.
    await expect.poll(() => types(session).filter((type) => type === 'heartbeat').length, { timeout: 6_000 }).toBeGreaterThanOrEqual(2);
    expect(types(session)[0]).toBe('welcome');
    expect(trustEvents(session)).toEqual([]);
    expect((await recorded(nodeId)).trustVersion).toBe(4);
    session.close();
  });

  it('refuses a Hello whose trustVersion or commandKinds is malformed or out of bounds, with the uniform bytes', async () => {
    const { nodeId, identity } = await joined();
    const malformed = [
      { trustVersion: -1 },
      { trustVersion: 1.5 },
      { trustVersion: '3' },
      { trustVersion: 2 ** 31 },
      { commandKinds: 'bcd.doctor' },
      { commandKinds: Array.from({ length: 33 }, (_, i) => `kind.${i}`) },
      { commandKinds: ['x'.repeat(65)] },
      { commandKinds: ['Bad Kind'] },
      { commandKinds: [7] },
    ];
    for (const fields of malformed) {
      const refused = await helloWith(identity, { nodeId, agentVersion: '0.2.0', ...fields });
      expect({ fields, status: refused.status, body: refused.body.toString() }).toEqual({
        fields,
        status: 403,
        body: SESSION_REFUSED.body.toString(),
      });
    }
    // The bounds themselves are accepted.
    const accepted = await helloWith(identity, {
      nodeId,
      agentVersion: '0.2.0',
      trustVersion: 2 ** 31 - 1,
      commandKinds: Array.from({ length: 32 }, (_, i) => `kind.${i}`),
    });
    expect(accepted.status).toBe(200);
    accepted.close();
  });
});

describe('a change of the trust set', () => {
  it('reaches every open session on two gateways once, and each node records the version delivered', async () => {
    pki.bump(5);
    const nodes = await Promise.all(Array.from({ length: 6 }, () => joined()));
    const sessions = await Promise.all(
      nodes.map(({ nodeId, identity }, i) =>
        helloWith(identity, { nodeId, agentVersion: '0.2.0', trustVersion: 5 }, i % 2 ? secondTarget : r.target),
      ),
    );
    // A node that holds two sessions (moving to a new connection) hears it on both.
    sessions.push(await helloWith(nodes[0]!.identity, { nodeId: nodes[0]!.nodeId, agentVersion: '0.2.0', trustVersion: 5 }, secondTarget));
    for (const s of sessions) expect(s.status).toBe(200);
    await expect.poll(() => sessions.every((s) => types(s)[0] === 'welcome'), { timeout: 5_000 }).toBe(true);
    expect(sessions.flatMap(trustEvents)).toEqual([]);
    const announced = [r.gateway.sessions.stats.announcedLeaseCalls, second.sessions.stats.announcedLeaseCalls];

    pki.bump(6);
    await expect.poll(() => sessions.every((s) => trustEvents(s).length === 1), { timeout: 10_000, interval: 100 }).toBe(true);
    sessions.forEach((s, i) => {
      const nodeId = nodes[i % nodes.length]!.nodeId;
      expect(trustBody(trustEvents(s)[0]!)).toMatchObject({ status: 'trust', nodeId, version: 6 });
    });
    // Each gateway heard it on its watch stream (a lease call at once, not the next scheduled one).
    expect(r.gateway.sessions.stats.announcedLeaseCalls).toBeGreaterThan(announced[0]!);
    expect(second.sessions.stats.announcedLeaseCalls).toBeGreaterThan(announced[1]!);
    for (const { nodeId } of nodes) expect((await recorded(nodeId)).trustVersion).toBe(6);

    // Later lease calls (every 400 ms here) send nothing again.
    const calls = r.gateway.sessions.stats.leaseCalls;
    await expect.poll(() => r.gateway.sessions.stats.leaseCalls, { timeout: 5_000 }).toBeGreaterThan(calls + 2);
    expect(sessions.map((s) => trustEvents(s).length)).toEqual(sessions.map(() => 1));
    for (const s of sessions) s.close();
  });

  it('a lease answer carries at most its bound of sessions, says there are more, and never names a session twice', async () => {
    pki.bump(7);
    const nodes = await Promise.all(Array.from({ length: 5 }, () => joined()));
    const sessions = await Promise.all(
      nodes.map(({ nodeId, identity }) => helloWith(identity, { nodeId, agentVersion: '0.2.0', trustVersion: 7 })),
    );
    await expect.poll(() => sessions.every((s) => types(s)[0] === 'welcome'), { timeout: 5_000 }).toBe(true);
    const gatewayId = r.gateway.sessions.id;
    const mine = new Set(nodes.map((n) => n.nodeId));
    // Version 8, seen only here (the gateways' own lease calls still deliver version 7): two sessions per answer.
    const next = { ...trustStateOf(pki.runtime), version: 8 };
    const named: string[] = [];
    const sessionIds: string[] = [];
    for (let call = 0; call < 20; call++) {
      const answer = await deliverTrust(r.h.pool, gatewayId, next, 2);
      expect(answer.trust.length).toBeLessThanOrEqual(2);
      expect(answer.more).toBe(answer.trust.length === 2);
      for (const e of answer.trust) {
        sessionIds.push(e.sessionId);
        named.push(trustBody({ type: 'trust', data: e.event }).nodeId);
      }
      if (!answer.more) break;
    }
    expect(new Set(sessionIds).size).toBe(sessionIds.length);
    expect(named.filter((id) => mine.has(id)).sort()).toEqual([...mine].sort());
    for (const { nodeId } of nodes) expect((await recorded(nodeId)).trustVersion).toBe(8);
    expect((await deliverTrust(r.h.pool, gatewayId, next, 2)).trust).toEqual([]);
    for (const s of sessions) s.close();
  });
});

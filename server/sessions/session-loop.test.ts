import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadIdentity } from '../../agent/renew/identity';
import { RENEWAL_EXIT } from '../../agent/renew/loop';
import { keepSessions } from '../../agent/sim/session-sim';
import { openSession } from '../../agent/session/session-client';
import { sessionCheck } from '../../agent/session/state-file';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { mintToken } from '../../test/join-harness';
import { BASE, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { runAgentLoop } from '../../test/session-agent';
import { useRenewHarness } from '../../test/session-harness';
import { revokeNodeIdentity } from '../nodes/lifecycle';

// The agent's session loop (agent run, bcd node) against a real gateway and API: it opens the session at
// once, renews on the session's connection and moves the session to the new certificate, reconnects after a
// gateway restart, and stops with exit 3 once its identity is revoked.

let r: RenewHarness;
let signingKey: KeyObject;
useRenewHarness((created) => ({ r, signingKey } = created));

const sessionRows = (nodeId: string) => testDb().nodeSession.findMany({ where: { nodeId }, orderBy: { openedAt: 'asc' } });
async function eventTypes(t: TestTenant, nodeId: string) {
  const events = await testDb().event.findMany({
    where: { tenantId: t.tenantId, type: { in: ['node.connected', 'node.disconnected'] } },
    orderBy: { id: 'asc' },
  });
  return events.filter((e) => (e.data as { nodeId?: string }).nodeId === nodeId).map((e) => e.type);
}

function startLoop(dir: string, renewAfterMs: number[]) {
  let renewals = 0;
  return runAgentLoop({
    identityDir: dir,
    ...r.target,
    agentVersion: '0.1.0-loop',
    signingKey,
    writeState: true,
    renewalDelay: () => renewAfterMs[renewals++] ?? 3_600_000,
  });
}

describe('runSessionLoop', () => {
  it('opens the session right away, renews on its connection, and moves the session to the new certificate', async () => {
    const t = await createTestTenant(testDb());
    const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!);
    const before = await loadIdentity(dir);
    const started = performance.now();
    const loop = startLoop(dir, [2_000]);
    await expect.poll(async () => (await sessionRows(answer.nodeId)).length, { timeout: 5_000, interval: 50 }).toBe(1);
    expect(performance.now() - started).toBeLessThan(2_000);
    await expect.poll(async () => (await sessionCheck(dir)).detail, { timeout: 5_000 }).toMatch(/^connected since .* last heartbeat/);
    expect((await sessionCheck(dir)).ok).toBe(true);
    const connections = r.gateway.stats.tlsConnections;

    // The renewal at 2 s: on the session's connection, then one new connection for the new certificate's session.
    await expect.poll(() => loop.opened.length, { timeout: 10_000 }).toBe(2);
    const after = await loadIdentity(dir);
    expect(after.leaf.serialNumber).not.toBe(before.leaf.serialNumber);
    expect(r.gateway.stats.tlsConnections).toBe(connections + 1);
    // The old session is closed once the new one is open: in the end one session, on the new certificate.
    await expect
      .poll(async () => (await sessionRows(answer.nodeId)).map((s) => s.certSerial), { timeout: 6_000 })
      .toEqual([after.leaf.serialNumber.toLowerCase()]);
    expect(await eventTypes(t, answer.nodeId)).toEqual(['node.connected']);

    expect(await loop.stop()).toBe(RENEWAL_EXIT.stopped);
    expect((await sessionCheck(dir)).ok).toBe(false);
  });

  it('reconnects by itself after a gateway restart, and exits 3 once its identity is revoked', async () => {
    const t = await createTestTenant(testDb());
    const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!);
    const loop = startLoop(dir, []);
    await expect.poll(() => loop.opened.length, { timeout: 5_000 }).toBe(1);
    await r.stopGateway();
    await new Promise((resolve) => setTimeout(resolve, 500));
    await r.startGateway();
    await expect.poll(() => loop.opened.length, { timeout: 20_000, interval: 100 }).toBe(2);
    await expect.poll(async () => (await sessionRows(answer.nodeId)).length, { timeout: 5_000 }).toBe(1);

    await revokeNodeIdentity(testDb(), t.operator, { tenantId: t.tenantId, nodeId: answer.nodeId });
    expect(await loop.exit).toBe(RENEWAL_EXIT.refused);
    expect(loop.lines.join('\n')).toMatch(/refused the session .* 3 times/);
  }, 60_000);
});

describe('dev --sim N --sessions (keepSessions)', () => {
  it('keeps one session per simulated machine until interrupted', async () => {
    const t = await createTestTenant(testDb());
    const machines = [];
    for (let i = 0; i < 5; i++) machines.push(await loadIdentity((await joinThroughGateway(r, (await mintToken(t)).token!)).dir));
    const controller = new AbortController();
    let connected = 0;
    const done = keepSessions({
      machines,
      target: r.target,
      agentVersion: '0.1.0-sim',
      signal: controller.signal,
      onChange: (s) => (connected = s.connected),
    });
    await expect.poll(() => connected, { timeout: 10_000 }).toBe(5);
    const rows = await testDb().nodeSession.findMany({ where: { nodeId: { in: machines.map((m) => m.identity.nodeId) } } });
    expect(new Set(rows.map((row) => row.nodeId)).size).toBe(5);
    controller.abort();
    expect(await done).toMatchObject({ connected: 0, opened: 5, stopped: 5 });
  });

  it('verifies every welcome under the key its join_signing_key_pin names, read through the gateway; another pin opens nothing', async () => {
    const t = await createTestTenant(testDb());
    const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!);
    const run = (pin: string) => runAgentLoop({ identityDir: dir, ...r.target, agentVersion: '0.1.0-loop', joinSigningKeyPin: pin });
    const wrong = run(`sha256/${Buffer.alloc(32, 7).toString('base64')}`);
    await expect
      .poll(() => wrong.lines.filter((l) => l.includes('does not match join_signing_key_pin')).length, { timeout: 10_000 })
      .toBeGreaterThanOrEqual(1);
    expect(wrong.opened).toEqual([]);
    expect(await sessionRows(answer.nodeId)).toEqual([]);
    expect(await wrong.stop()).toBe(RENEWAL_EXIT.stopped);

    const right = run(r.h.trust.signingKeyPin);
    await expect.poll(() => right.opened.length, { timeout: 10_000 }).toBe(1);
    expect(right.opened[0]!.welcome).toMatchObject({ status: 'welcome', nodeId: answer.nodeId });
    expect(await right.stop()).toBe(RENEWAL_EXIT.stopped);
  });

  it('refuses a welcome that does not verify under the key it was given', async () => {
    const t = await createTestTenant(testDb());
    const { dir } = await joinThroughGateway(r, (await mintToken(t)).token!);
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
    await expect(
      openSession(r.target, await loadIdentity(dir), { basePath: BASE, agentVersion: '0.1.0-loop', signingKey: other }),
    ).rejects.toThrow();
    // The same session with the right key opens.
    const session = await openSession(r.target, await loadIdentity(dir), { basePath: BASE, agentVersion: '0.1.0-loop', signingKey });
    session.close();
  });
});

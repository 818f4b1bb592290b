import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signEnvelope } from '../../protocol/envelope';
import { spkiPin } from '../../protocol/pins';
import { insertApiKey } from '../../server/api-keys/api-keys';
import { principalOf } from '../../server/authz/principal';
import { loadPki } from '../../server/pki/bundle/store';
import type { PkiBundle } from '../../server/pki/bundle/bundle';
import { PKI_KEY_KINDS } from '../../server/pki/rotation/kinds';
import { createTenant } from '../../server/tenants/tenants';
import { openSession, SessionRefusedError } from '../../agent/session/session-client';
import { runSessionLoop } from '../../agent/session/loop';
import { loadNodeIdentity } from '../../agent/renew/identity';
import {
  newJoinToken,
  rotate,
  rotationStatusOf,
  rotationStep,
  startRotationDeployment,
  storedTrustVersion,
  wellKnownOf,
  BASE,
  type RotationDeployment,
} from './deployment';
import { heldTrustVersion, installPinsNow, joinAgentNode, openTrust } from './fleet-agents';
import { startForgingGateway } from './forging-gateway';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

// What a rotation refuses, end to end: an agent ignores a forged `trust` event (an untrusted signer, another
// node's set, a version not newer than its own) and applies only genuine ones; the server refuses a step out of
// order, a caller who is not a root admin, and the retirement of a node CA whose certificates are still valid
// (unless forced with a reason, audited), after which a certificate of the retired CA is refused.

let d: RotationDeployment;
let bundle: PkiBundle;

beforeAll(async () => {
  d = await startRotationDeployment({ label: 'rotation_refusals', apiCount: 1 });
  bundle = await loadPki(d.database.db, d.secret);
}, 180_000);

afterAll(async () => {
  await d?.stop();
});

describe('an agent and forged trust events', () => {
  it(
    'ignores a set from an untrusted signer, for another node or not newer, and applies the genuine ones',
    { timeout: 90_000 },
    async () => {
      const pins = await installPinsNow(d);
      const doc = await wellKnownOf(d.apis[0]!.url);
      const node = await joinAgentNode(d, { token: await newJoinToken(d), pins });
      const held = (await heldTrustVersion(node.identityDir)) ?? 0;
      const signingKey = createPrivateKey(bundle.signingKey.privateKeyPem);
      const attacker = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const attackerPin = spkiPin(attacker.publicKey);
      const genuine = (version: number, extra: Partial<{ servingCaPins: string[] }> = {}) => ({
        status: 'trust',
        nodeId: node.nodeId,
        version,
        servingCaPins: [pins.servingCaPin],
        joinSigningKeyPins: [pins.joinSigningKeyPin],
        joinEncryptionKeyPins: [pins.joinEncryptionKeyPin],
        joinEncryptionJwks: [doc.join.encryptionJwk],
        commandTrustBundle: bundle.commandTrustBundle,
        ...extra,
      });
      // Each forged set would add the attacker's key as a serving CA: had any been applied, trust.json would show it.
      const forged = { servingCaPins: [pins.servingCaPin, attackerPin] };
      const gateway = await startForgingGateway({
        bundle,
        document: () => wellKnownOf(d.apis[0]!.url),
        eventsFor: (nodeId) => [
          { event: 'trust', data: signEnvelope(genuine(held + 10, forged), attacker.privateKey) },
          { event: 'trust', data: signEnvelope({ ...genuine(held + 10, forged), nodeId: 'node_someoneelse00000000000' }, signingKey) },
          { event: 'trust', data: signEnvelope({ ...genuine(held + 2), nodeId }, signingKey) },
          { event: 'trust', data: signEnvelope({ ...genuine(held + 1, forged), nodeId }, signingKey) },
          { event: 'trust', data: signEnvelope({ ...genuine(held + 2, forged), nodeId }, signingKey) },
          { event: 'trust', data: signEnvelope({ ...genuine(held + 3), nodeId }, signingKey) },
        ],
      });
      // The agent keeps its session through the forging gateway: its chain comes from the real serving CA.
      const controller = new AbortController();
      const lines: string[] = [];
      const log = (line: string) => void lines.push(line);
      const running = runSessionLoop({
        identityDir: node.identityDir,
        trust: await openTrust(node.identityDir, pins, log),
        gatewayUrl: gateway.url,
        servingCaPin: pins.servingCaPin,
        joinSigningKeyPin: pins.joinSigningKeyPin,
        agentVersion: '0.1.0',
        startJitterMs: 0,
        signal: controller.signal,
        log,
      });
      try {
        await expect
          .poll(() => heldTrustVersion(node.identityDir), { timeout: 30_000, interval: 200, message: lines.join('\n') })
          .toBe(held + 3);
        const stored = JSON.parse(await readFile(path.join(node.identityDir, 'trust.json'), 'utf8')) as { servingCaPins: string[] };
        expect(stored.servingCaPins).toEqual([pins.servingCaPin]);
        expect(JSON.stringify(stored)).not.toContain(attackerPin);
        // One line for each set ignored, saying why (and never the envelope).
        expect(lines.filter((line) => /ignored a trust set/.test(line))).toHaveLength(4);
        expect(lines.join('\n')).not.toContain(attackerPin);
      } finally {
        controller.abort();
        await running;
        await gateway.close();
      }
    },
  );
});

describe('rotation steps the server refuses', () => {
  it('activating or retiring a key that was never prepared: INVALID_STATE, nothing changes', async () => {
    const version = await storedTrustVersion(d);
    for (const kind of PKI_KEY_KINDS) {
      for (const step of ['activate', 'retire'] as const) {
        const answer = await rotationStep(d, kind, step);
        expect(answer.body.code, `${kind} ${step}`).toBe('INVALID_STATE');
      }
    }
    expect(await storedTrustVersion(d)).toBe(version);
    expect(await d.database.db.auditEntry.count({ where: { action: { startsWith: 'pki.rotation.' } } })).toBe(0);
  });

  it('a caller who is not a root admin: ACCESS_DENIED for every step and for the status', async () => {
    const root = principalOf('local', 'rotation-refusals', [[d.pool.ownerTenantId, 'admin']]);
    const other = await createTenant(d.database.db, root, { name: 'not-root' });
    const otherAdmin = (await insertApiKey(d.database.db, { tenantId: other.id, role: 'admin', name: 'other-admin' }, 'test')).key;
    const version = await storedTrustVersion(d);
    for (const apiKey of [d.operatorKey, otherAdmin]) {
      for (const step of ['prepare', 'activate', 'retire'] as const) {
        const answer = await rotationStep(d, 'node-ca', step, { apiKey });
        expect(answer.status).toBe(403);
        expect(answer.body.code).toBe('ACCESS_DENIED');
      }
      const status = await fetch(`${d.apis[0]!.url}${BASE}/v1/pki/rotation`, { headers: { authorization: `Bearer ${apiKey}` } });
      expect(status.status).toBe(403);
    }
    const anonymous = await fetch(`${d.apis[0]!.url}${BASE}/v1/pki/rotation/node-ca/prepare`, { method: 'POST', body: '{}' });
    expect([401, 403]).toContain(anonymous.status);
    expect(await storedTrustVersion(d)).toBe(version);
    expect(await d.database.db.auditEntry.count({ where: { action: { startsWith: 'pki.rotation.' } } })).toBe(0);
  });

  it(
    'retiring a node CA while a certificate it issued is valid: INVALID_STATE; --force needs a reason; then its certificates are refused',
    { timeout: 120_000 },
    async () => {
      const pins = await installPinsNow(d);
      const node = await joinAgentNode(d, { token: await newJoinToken(d), pins });
      await rotate(d, 'node-ca', 'prepare');
      await rotate(d, 'node-ca', 'activate');
      const status = (await rotationStatusOf(d)).keys.find((k) => k.kind === 'node-ca')!;
      expect(status.liveCertificatesOfPrevious).toBeGreaterThanOrEqual(1);

      const refused = await rotationStep(d, 'node-ca', 'retire');
      expect(refused.body.code).toBe('INVALID_STATE');
      const noReason = await rotationStep(d, 'node-ca', 'retire', { force: true });
      expect(noReason.body.code).toBe('INVALID_ARGUMENT');
      expect((await rotationStatusOf(d)).keys.find((k) => k.kind === 'node-ca')!.phase).toBe('active');

      // Still accepted while the old CA is trusted: the node opens a session with its certificate of the old CA.
      const identity = await loadNodeIdentity(node.identityDir);
      const target = { gatewayUrl: d.gateways[0]!.url, servingCaPin: pins.servingCaPin };
      (await openSession(target, identity, { basePath: BASE, agentVersion: '0.1.0' })).close();

      const forced = await rotationStep(d, 'node-ca', 'retire', { force: true, reason: 'old node CA key exposed' });
      expect(forced.status).toBe(200);
      const audit = await d.database.db.auditEntry.findFirstOrThrow({ where: { action: 'pki.rotation.retired' } });
      expect(JSON.stringify(audit.data)).toContain('old node CA key exposed');
      expect(await d.database.db.event.count({ where: { type: 'security.pki.rotation.retired' } })).toBe(1);

      // The gateway follows: a certificate of the retired CA no longer opens a session (refused at the Hello or in
      // the handshake).
      await expect
        .poll(
          () =>
            openSession(target, identity, { basePath: BASE, agentVersion: '0.1.0' }).then(
              (s) => (s.close(), 'accepted'),
              (error: unknown) => (error instanceof SessionRefusedError ? 'refused' : `failed: ${(error as Error).message}`),
            ),
          { timeout: 30_000, interval: 500 },
        )
        .not.toBe('accepted');
    },
  );
});

import { createPublicKey, randomBytes, X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigratedDatabase, dropDatabase } from '../../../test/db';
import { createTestTenant, failure } from '../../../test/fixtures';
import { principalOf } from '../../authz/principal';
import { createDb, type Db } from '../../db/client';
import { newId } from '../../ids';
import { loadPkiRuntime, PkiSource, type PkiRuntime } from '../../join/join-runtime';
import { ensureRootTenant } from '../../tenants/tenants';
import { spkiPin } from '../../../protocol/pins';
import { initPki, loadPki } from '../bundle/store';
import { installPins } from '../pins-summary';
import { generateInstallScript } from '../../daemon/generate';
import { activateRotation, prepareRotation, retireRotation, rotationStatus } from './rotation';

// The bundle is a singleton row, so this file works in a database of its own.
const name = `pki_rotation_${randomBytes(4).toString('hex')}`;
const secret = 'a-long-enough-test-secret-0123456789-rotation';
let url: string;
let db: Db;
let root: ReturnType<typeof principalOf>;
let pins: ReturnType<typeof installPins>;
const savedSecret = process.env.BETTER_COMPUTE_SECRET;

beforeAll(async () => {
  url = await createMigratedDatabase(name);
  db = createDb(url, { max: 6 });
  const tenant = await ensureRootTenant(db);
  root = principalOf('operator', newId('op'), [[tenant.id, 'admin']]);
  pins = installPins(await initPki(db, { trustDomain: 'rotation.example.com', secret }));
  // rotationStatus reads the pins of keys never rotated from the process's loaded PKI.
  process.env.BETTER_COMPUTE_SECRET = secret;
}, 120_000);

afterAll(async () => {
  process.env.BETTER_COMPUTE_SECRET = savedSecret;
  await db?.$disconnect();
  await dropDatabase(name);
});

const step = { secret };
const keyOf = async (kind: string) => (await rotationStatus(db, root)).keys.find((k) => k.kind === kind)!;

/** A valid, unrevoked certificate row issued before `ca_pin` existed (null), as the previous CA's. */
/** A node with one valid certificate: issued before `ca_pin` existed (null), or by the node CA with `caPin`. */
async function insertLegacyCertificate(caPin: string | null = null): Promise<string> {
  const t = await createTestTenant(db);
  const nodeId = newId('node');
  await db.$executeRawUnsafe(
    `INSERT INTO nodes (id, tenant_id, site_id, pool_id, role, state, trust, identity_generation, attestor)
     VALUES ($1, $2, $3, $4, 'node', 'active', 'token', 1, 'join-token')`,
    nodeId,
    t.tenantId,
    t.siteId,
    t.poolId,
  );
  await db.$executeRawUnsafe(
    `INSERT INTO node_certs (serial, node_id, identity_generation, role, spki_sha256, der, not_before, not_after, ca_pin)
     VALUES ($1, $2, 1, 'node', sha256($3::bytea), '\\x00', compute_now(), compute_now() + interval '1 day', $4)`,
    `legacy-${nodeId}`,
    nodeId,
    Buffer.from(nodeId),
    caPin,
  );
  return nodeId;
}

// Every step opens and seals the bundle with scrypt N=2^17: seconds each on a busy machine.
describe('trust rotation steps', { timeout: 180_000 }, () => {
  it('lets only root admins take a step or read the status', async () => {
    const elsewhere = await createTestTenant(db);
    const rootTenant = await ensureRootTenant(db);
    for (const caller of [elsewhere.admin, principalOf('operator', newId('op'), [[rootTenant.id, 'operator']])]) {
      expect((await failure(prepareRotation(db, caller, { kind: 'serving-ca', ...step }))).code).toBe('ACCESS_DENIED');
      expect((await failure(activateRotation(db, caller, { kind: 'serving-ca', ...step }))).code).toBe('ACCESS_DENIED');
      expect((await failure(retireRotation(db, caller, { kind: 'node-ca', force: true, reason: 'x', ...step }))).code).toBe(
        'ACCESS_DENIED',
      );
      expect((await failure(rotationStatus(db, caller))).code).toBe('ACCESS_DENIED');
    }
    expect(await db.pkiRotation.count()).toBe(0);
  });

  it('starts idle at trust version 1 with the install pins, and refuses to activate or retire what was never prepared', async () => {
    const status = await rotationStatus(db, root);
    expect(status.trustVersion).toBe(1);
    expect(status.keys.map((k) => [k.kind, k.phase, k.nextStep])).toEqual([
      ['serving-ca', 'idle', 'prepare'],
      ['join-signing', 'idle', 'prepare'],
      ['join-encryption', 'idle', 'prepare'],
      ['node-ca', 'idle', 'prepare'],
      ['command-signing', 'idle', 'prepare'],
    ]);
    expect(status.keys.map((k) => k.currentPin).slice(0, 4)).toEqual([
      pins.servingCaPin,
      pins.joinSigningKeyPin,
      pins.joinEncryptionKeyPin,
      pins.nodeCaPin,
    ]);
    // A CLI run whose secret is not in the environment (the data directory's) passes it.
    delete process.env.BETTER_COMPUTE_SECRET;
    try {
      expect((await rotationStatus(db, root, { secret })).keys.map((k) => k.currentPin)).toEqual(status.keys.map((k) => k.currentPin));
    } finally {
      process.env.BETTER_COMPUTE_SECRET = secret;
    }
    expect((await failure(activateRotation(db, root, { kind: 'join-signing', ...step }))).code).toBe('INVALID_STATE');
    expect((await failure(retireRotation(db, root, { kind: 'join-signing', ...step }))).code).toBe('INVALID_STATE');
    expect((await db.pkiBundle.findFirstOrThrow()).trustVersion).toBe(1);
  });

  it('rotates the node CA: prepare, activate, and retire only by force while a certificate of the old CA lives', async () => {
    const nodeId = await insertLegacyCertificate();
    const prepared = await prepareRotation(db, root, { kind: 'node-ca', ...step });
    expect(prepared).toMatchObject({ kind: 'node-ca', phase: 'prepared', trustVersion: 2 });
    expect(prepared.status).toMatchObject({ phase: 'prepared', currentPin: pins.nodeCaPin, nextStep: 'activate' });
    const nextPin = prepared.status.otherPin!;
    expect(nextPin).toMatch(/^sha256\//);
    // Trusted, not used: the bundle keeps the CA in use where every reader finds it.
    let bundle = await loadPki(db, secret);
    expect(spkiPin(bundle.nodeCa.certificatePem)).toBe(pins.nodeCaPin);
    expect(bundle.rotations?.['node-ca']?.phase).toBe('prepared');
    expect(bundle.trustVersion).toBe(2);
    expect((await failure(prepareRotation(db, root, { kind: 'node-ca', ...step }))).code).toBe('INVALID_STATE');

    const activated = await activateRotation(db, root, { kind: 'node-ca', ...step });
    expect(activated).toMatchObject({ phase: 'active', trustVersion: 3 });
    expect(activated.status).toMatchObject({ phase: 'active', currentPin: nextPin, otherPin: pins.nodeCaPin, nextStep: 'retire' });
    expect(activated.status.liveCertificatesOfPrevious).toBe(1);
    bundle = await loadPki(db, secret);
    expect(spkiPin(bundle.nodeCa.certificatePem)).toBe(nextPin);
    expect(spkiPin(bundle.rotations!['node-ca']!.certificatePem!)).toBe(pins.nodeCaPin);

    const refused = await failure(retireRotation(db, root, { kind: 'node-ca', ...step }));
    expect(refused.code).toBe('INVALID_STATE');
    expect(refused.message).toMatch(/1 valid certificate/);
    expect((await failure(retireRotation(db, root, { kind: 'node-ca', force: true, ...step }))).code).toBe('INVALID_ARGUMENT');
    expect((await failure(retireRotation(db, root, { kind: 'node-ca', force: true, reason: '   ', ...step }))).code).toBe(
      'INVALID_ARGUMENT',
    );
    expect((await db.pkiBundle.findFirstOrThrow()).trustVersion).toBe(3);

    // A certificate the new CA issued (after activation) is not the old CA's.
    const renewedNodeId = await insertLegacyCertificate(nextPin);

    const retired = await retireRotation(db, root, { kind: 'node-ca', force: true, reason: 'old CA key exposed', ...step });
    // The old CA's certificate is revoked in the step's transaction (a gateway may trust that CA a few seconds
    // longer); the new CA's is untouched.
    const certs = await db.nodeCert.findMany({ where: { nodeId: { in: [nodeId, renewedNodeId] } } });
    expect(certs.find((c) => c.nodeId === nodeId)).toMatchObject({ revocationReason: 'node-ca-retired' });
    expect(certs.find((c) => c.nodeId === nodeId)!.revokedAt).not.toBeNull();
    expect(certs.find((c) => c.nodeId === renewedNodeId)).toMatchObject({ revokedAt: null, revocationReason: null });
    const revokedEvents = await db.event.findMany({
      where: { type: 'security.certificate-revoked', data: { path: ['nodeId'], equals: nodeId } },
    });
    expect(revokedEvents.map((e) => e.data)).toEqual([{ nodeId, serial: `legacy-${nodeId}`, reason: 'node-ca-retired' }]);
    expect(
      await db.event.count({ where: { type: 'security.certificate-revoked', data: { path: ['nodeId'], equals: renewedNodeId } } }),
    ).toBe(0);
    expect(retired).toMatchObject({ phase: 'retired', trustVersion: 4 });
    expect(retired.status).toMatchObject({ phase: 'idle', currentPin: nextPin, otherPin: null, nextStep: 'prepare' });
    expect(retired.status.lastRetiredAt).not.toBeNull();
    bundle = await loadPki(db, secret);
    expect(bundle.rotations).toBeUndefined();
    expect(spkiPin(bundle.nodeCa.certificatePem)).toBe(nextPin);

    const row = await db.pkiRotation.findFirstOrThrow({ where: { kind: 'node-ca' } });
    expect(row).toMatchObject({
      phase: 'retired',
      previousPin: pins.nodeCaPin,
      nextPin,
      preparedVersion: 2,
      activatedVersion: 3,
      retiredVersion: 4,
      preparedBy: root.actor,
      retiredBy: root.actor,
      forcedReason: 'old CA key exposed',
    });
    const audit = await db.auditEntry.findMany({ where: { resource: 'compute-pki/node-ca' }, orderBy: { id: 'asc' } });
    expect(audit.map((a) => a.action)).toEqual(['pki.rotation.prepared', 'pki.rotation.activated', 'pki.rotation.retired']);
    expect(audit[2]!.data).toMatchObject({
      forced: true,
      reason: 'old CA key exposed',
      liveCertificates: 1,
      revokedCertificates: 1,
      retiredPin: pins.nodeCaPin,
    });
    const events = await db.event.findMany({ where: { type: { startsWith: 'security.pki.rotation.' } }, orderBy: { id: 'asc' } });
    expect(events.map((e) => e.type)).toEqual([
      'security.pki.rotation.prepared',
      'security.pki.rotation.activated',
      'security.pki.rotation.retired',
    ]);
    expect(JSON.stringify(events.map((e) => e.data))).not.toMatch(/PRIVATE KEY/);
    expect(nodeId).toMatch(/^node_/);
  });

  it('lets one of two concurrent steps of one key win', async () => {
    const results = await Promise.allSettled([
      prepareRotation(db, root, { kind: 'command-signing', ...step }),
      prepareRotation(db, root, { kind: 'command-signing', ...step }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')!;
    expect(['CONFLICT', 'INVALID_STATE']).toContain((lost.reason as { code: string }).code);
    expect(await db.pkiRotation.count({ where: { kind: 'command-signing' } })).toBe(1);
    const bundle = await loadPki(db, secret);
    // The command trust bundle lists the command CA in use first, then the prepared one.
    expect(bundle.commandTrustBundle).toHaveLength(2);
    expect((await keyOf('command-signing')).phase).toBe('prepared');
  });

  it('is followed by a second PKI source on the same database within seconds', async () => {
    const other = createDb(url, { max: 2 });
    const source = new PkiSource(other, () => secret, { databaseUrl: url });
    try {
      const before = (await source.load())!;
      // This process's own runtime (the console's, which generates install scripts), loaded before the steps.
      expect((await loadPkiRuntime(db))!.servingCaPin).toBe(pins.servingCaPin);
      expect(before.trust!.servingCaPins).toEqual([pins.servingCaPin]);
      const seen: PkiRuntime[] = [];
      const unsubscribe = source.onChange((runtime) => seen.push(runtime));
      const prepared = await prepareRotation(db, root, { kind: 'serving-ca', ...step });
      const nextPin = prepared.status.otherPin!;
      const deadline = Date.now() + 60_000;
      while (!seen.some((r) => r.trust!.version === prepared.trustVersion) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      const after = seen.find((r) => r.trust!.version === prepared.trustVersion)!;
      expect(after.trust!.servingCaPins).toEqual([pins.servingCaPin, nextPin]);
      expect(spkiPin(after.servingCa!.certificatePem)).toBe(pins.servingCaPin);
      expect(await source.load()).toBe(after);

      const activated = await activateRotation(db, root, { kind: 'serving-ca', ...step });
      while (!seen.some((r) => r.trust!.version === activated.trustVersion) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      const active = seen.find((r) => r.trust!.version === activated.trustVersion)!;
      expect(active.trust!.servingCaPins).toEqual([nextPin, pins.servingCaPin]);
      expect(active.servingCaPin).toBe(nextPin);
      expect(spkiPin(active.servingCa!.certificatePem)).toBe(nextPin);
      // The command-signing key in use is the key of the first certificate of the command trust bundle.
      const firstCommandCa = new X509Certificate(Buffer.from(active.trust!.commandTrustBundle[0]!, 'base64'));
      expect(spkiPin(createPublicKey(active.commandSigningKey!))).toBe(spkiPin(firstCommandCa.publicKey));
      unsubscribe();

      // An install script generated after the activation embeds the new pin, though this process loaded the
      // PKI (for the status) before the step.
      const t = await createTestTenant(db);
      const { script } = await generateInstallScript(
        db,
        t.admin,
        {
          tenantId: t.tenantId,
          poolId: t.poolId,
          gatewayUrl: 'https://gw.example.com',
          baseUrl: 'https://compute.example.com',
          sha256: { amd64: 'a'.repeat(64) },
        },
        '/nonexistent',
      );
      expect(script).toContain(`serving_ca_spki_pin = "${nextPin}"`);
    } finally {
      await source.close();
      await other.$disconnect();
    }
  });
});

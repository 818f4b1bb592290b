import { randomBytes, randomUUID, X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt, type JoinTrust } from '../../../agent/join';
import { generateNodeKeyAndCsr } from '../../../agent/keys';
import { buildRenewBody } from '../../../agent/renew/renew';
import { loadIdentity, type LoadedIdentity } from '../../../agent/renew/identity';
import { writeIdentity } from '../../../agent/identity-store';
import { decodeBase64url } from '../../../protocol/base64url';
import { verifyEnvelope } from '../../../protocol/envelope';
import { spkiPin } from '../../../protocol/pins';
import { createMigratedDatabase, dropDatabase } from '../../../test/db';
import { createTestTenant, type TestTenant } from '../../../test/fixtures';
import { machineClaims } from '../../../test/join-harness';
import { principalOf } from '../../authz/principal';
import { createServices, type Services } from '../../boot/services';
import { createDb, type Db } from '../../db/client';
import { voucherFromServingChain } from '../../gateway/gateway';
import { buildWellKnownDocument } from '../../entry/well-known';
import { newId } from '../../ids';
import type { PkiSource, PkiRuntime } from '../../join/join-runtime';
import { PEER_HEADER, VOUCH_HEADER, vouchHeaders } from '../../vouching/vouch';
import { ensureRootTenant } from '../../tenants/tenants';
import { createJoinToken } from '../../tokens/join-tokens';
import { createPkiBundle } from '../bundle/bundle';
import { initPki, loadPki } from '../bundle/store';
import { issueGatewayCertificate } from '../issuance/gateway';
import { activateRotation, prepareRotation, retireRotation } from './rotation';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

// The bundle is a singleton row, so this file works in a database of its own, with services of its own.
const name = `pki_rotation_use_${randomBytes(4).toString('hex')}`;
const secret = 'a-long-enough-test-secret-0123456789-consumers';
const RENEW_PATH = '/api/compute/v1/renew';
let db: Db;
let services: Services;
let root: ReturnType<typeof principalOf>;
let t: TestTenant;

beforeAll(async () => {
  const url = await createMigratedDatabase(name);
  db = createDb(url, { max: 6 });
  const tenant = await ensureRootTenant(db);
  root = principalOf('operator', newId('op'), [[tenant.id, 'admin']]);
  await initPki(db, { trustDomain: 'use.example.com', secret });
  services = createServices({ databaseUrl: url, db, env: { BETTER_COMPUTE_SECRET: secret }, pgPoolMax: 4 });
  t = await createTestTenant(db);
}, 120_000);

afterAll(async () => {
  await services?.close();
  await db?.$disconnect();
  await dropDatabase(name);
});

const step = { secret };
/** The services' runtime right after a step (their PKI source checks the version now rather than within 2 s). */
const current = async (): Promise<PkiRuntime> => (await (services.pki as PkiSource).check())!;
const token = async () =>
  (
    await createJoinToken(db, t.admin, {
      tenantId: t.tenantId,
      poolId: t.pool.id,
      ttlSeconds: 3600,
      maxUses: 1,
      allowReclaim: false,
      idempotencyKey: randomUUID(),
    })
  ).token!;

/** A join sealed to `encryptionJwk` (the key in use unless given); the answer envelope and its body. */
async function join(runtime: PkiRuntime, encryptionJwk = runtime.crypto.encryptionPublicJwk) {
  const trust: JoinTrust = {
    encryptionJwk,
    signingCertificateDer: Buffer.from(runtime.crypto.signingCertificate, 'base64'),
    signingKeyPin: runtime.crypto.signingKeyPin,
  };
  const keys = generateNodeKeyAndCsr();
  const attempt = await prepareJoinAttempt({ token: await token(), trust, claims: machineClaims(), keys });
  const answer = await services.join.joinBody(Buffer.from(attempt.body));
  const envelope = JSON.parse(answer.body.toString()) as { body: string; sig: string; sigs?: { pin: string; sig: string }[] };
  const body = answer.status === 200 ? (JSON.parse(decodeBase64url(envelope.body)!.toString()) as Record<string, unknown>) : null;
  return { status: answer.status, envelope, body, keys };
}

/** Whether `sig` over the envelope's bytes verifies under the public key of `certificateB64`. */
const verifiesUnder = (envelope: { body: string }, sig: string, certificateB64: string) => {
  try {
    verifyEnvelope({ body: envelope.body, sig }, new X509Certificate(Buffer.from(certificateB64, 'base64')).publicKey);
    return true;
  } catch {
    return false;
  }
};

/** A node joined with `runtime`'s keys, its identity written to a directory and loaded from it as bcd does. */
async function joinedIdentity(runtime: PkiRuntime) {
  const joined = await join(runtime);
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-rot-'));
  await writeIdentity(dir, {
    privateKeyPem: joined.keys.privateKeyPem,
    certificateChain: joined.body!.certificateChain as string[],
    nodeId: joined.body!.nodeId as string,
    siteId: joined.body!.siteId as string,
    trustDomain: joined.body!.trustDomain as string,
    role: 'node',
  });
  return loadIdentity(dir);
}

/** A renewal of `identity` with a new key, vouched for with `voucher` as a gateway does. */
async function renewVouched(identity: LoadedIdentity, voucher: ReturnType<typeof voucherFromServingChain>) {
  const next = generateNodeKeyAndCsr();
  const body = Buffer.from(buildRenewBody(identity, next.csrDer, next.csrSha256, Math.floor(Date.now() / 1000)));
  const headers = vouchHeaders(voucher, identity.leaf.raw, body, RENEW_PATH);
  return services.renew.renew({ body, vouch: headers[VOUCH_HEADER], peer: headers[PEER_HEADER], path: RENEW_PATH });
}

// Every step opens and seals the bundle with scrypt N=2^17, and the services open it again: seconds each.
describe('trust rotation, as joins, renewals and vouching see it', { timeout: 240_000 }, () => {
  it('signs join answers with every trusted signing key while a signing rotation is prepared or active', async () => {
    const before = await current();
    const plain = await join(before);
    expect(plain.status).toBe(200);
    expect(plain.envelope.sigs).toBeUndefined();
    expect(plain.body!.trust).toEqual({
      version: 1,
      servingCaPins: [before.servingCaPin],
      joinSigningKeyPins: [before.crypto.signingKeyPin],
      joinEncryptionKeyPins: [before.crypto.encryptionKeyPin],
    });
    const row = await db.nodeCert.findFirstOrThrow({ where: { nodeId: plain.body!.nodeId as string } });
    expect(row.caPin).toBe(before.crypto.nodeCaPin);

    await prepareRotation(db, root, { kind: 'join-signing', ...step });
    const prepared = await current();
    const [inUse, next] = prepared.trust!.signingKeys;
    expect(inUse!.pin).toBe(before.crypto.signingKeyPin);
    const during = await join(prepared);
    expect(during.status).toBe(200);
    expect(during.envelope.sigs!.map((s) => s.pin)).toEqual([inUse!.pin, next!.pin]);
    expect(verifiesUnder(during.envelope, during.envelope.sig, inUse!.certificate)).toBe(true);
    expect(verifiesUnder(during.envelope, during.envelope.sigs![1]!.sig, next!.certificate)).toBe(true);
    expect((during.body!.trust as { joinSigningKeyPins: string[] }).joinSigningKeyPins).toEqual([inUse!.pin, next!.pin]);
    const doc = await buildWellKnownDocument(() => services.pki.load());
    expect((doc.join as { next: { signingKeyPin: string; encryptionKeyPin: string } }).next).toMatchObject({
      signingKeyPin: next!.pin,
      encryptionKeyPin: before.crypto.encryptionKeyPin,
    });

    await activateRotation(db, root, { kind: 'join-signing', ...step });
    const active = await current();
    const after = await join(active);
    expect(after.status).toBe(200);
    expect(verifiesUnder(after.envelope, after.envelope.sig, next!.certificate)).toBe(true);
    // An agent installed before the rotation finds the old key's signature in `sigs`.
    const old = after.envelope.sigs!.find((s) => s.pin === inUse!.pin)!;
    expect(verifiesUnder(after.envelope, old.sig, inUse!.certificate)).toBe(true);

    await retireRotation(db, root, { kind: 'join-signing', ...step });
    const retired = await join(await current());
    expect(retired.envelope.sigs).toBeUndefined();
    expect(verifiesUnder(retired.envelope, retired.envelope.sig, next!.certificate)).toBe(true);
    expect((await buildWellKnownDocument(() => services.pki.load())).join).not.toHaveProperty('next');
  });

  it('opens seals to the previous encryption key after activation, and not after retirement', async () => {
    const before = await current();
    const oldJwk = before.crypto.encryptionPublicJwk;
    await prepareRotation(db, root, { kind: 'join-encryption', ...step });
    await activateRotation(db, root, { kind: 'join-encryption', ...step });
    const active = await current();
    expect(active.crypto.encryptionKeyPin).not.toBe(before.crypto.encryptionKeyPin);
    expect((await join(active, oldJwk)).status).toBe(200);
    expect((await join(active)).status).toBe(200);
    await retireRotation(db, root, { kind: 'join-encryption', ...step });
    const retired = await current();
    expect((await join(retired, oldJwk)).status).toBe(403);
    expect((await join(retired)).status).toBe(200);
  });

  it('renews a certificate of the previous node CA after activation, from the new node CA', async () => {
    const before = await current();
    const identity = await joinedIdentity(before);
    await prepareRotation(db, root, { kind: 'node-ca', ...step });
    await activateRotation(db, root, { kind: 'node-ca', ...step });
    const active = await current();
    expect(active.trust!.nodeCas.map((ca) => ca.pin)).toEqual([active.crypto.nodeCaPin, before.crypto.nodeCaPin]);

    const gateway = issueGatewayCertificate(await loadPki(db, secret), { sans: ['localhost'] });
    const voucher = voucherFromServingChain(gateway.chainPem, gateway.privateKeyPem);
    const answer = await renewVouched(identity, voucher);
    expect(answer.status).toBe(200);
    const renewed = JSON.parse(decodeBase64url(JSON.parse(answer.body.toString()).body)!.toString()) as {
      certificateChain: string[];
      trust: { version: number };
    };
    const leaf = new X509Certificate(Buffer.from(renewed.certificateChain[0]!, 'base64'));
    const newCa = new X509Certificate(Buffer.from(renewed.certificateChain[1]!, 'base64'));
    expect(spkiPin(newCa.publicKey)).toBe(active.crypto.nodeCaPin);
    expect(leaf.verify(newCa.publicKey)).toBe(true);
    expect(renewed.trust.version).toBe(active.trust!.version);
    const rows = await db.nodeCert.findMany({ where: { nodeId: identity.identity.nodeId }, orderBy: { createdAt: 'asc' } });
    expect(rows.map((r) => r.caPin)).toEqual([before.crypto.nodeCaPin, active.crypto.nodeCaPin]);
  });

  it('believes vouching from a gateway whose leaf comes from the prepared serving CA, and not from a foreign CA', async () => {
    const identity = await joinedIdentity(await current());
    const renewThrough = async (servingCa: { certificatePem: string; privateKeyPem: string }) => {
      const gateway = issueGatewayCertificate({ servingCa }, { sans: ['localhost'] });
      return (await renewVouched(identity, voucherFromServingChain(gateway.chainPem, gateway.privateKeyPem))).status;
    };
    await prepareRotation(db, root, { kind: 'serving-ca', ...step });
    const prepared = await current();
    const bundle = await loadPki(db, secret);
    const nextCa = bundle.rotations!['serving-ca']!;
    expect(prepared.trust!.servingCaPins).toEqual([spkiPin(bundle.servingCa.certificatePem), spkiPin(nextCa.certificatePem!)]);
    expect(await renewThrough(createPkiBundle({ trustDomain: 'foreign.example.com' }).servingCa)).toBe(403);
    expect(await renewThrough({ certificatePem: nextCa.certificatePem!, privateKeyPem: nextCa.privateKeyPem })).toBe(200);
    process.env.BETTER_COMPUTE_GATEWAY_URL = 'https://gateway.use.example.com';
    try {
      const doc = await buildWellKnownDocument(() => services.pki.load());
      expect((doc.gateway as { servingCaPins: string[] }).servingCaPins).toEqual(prepared.trust!.servingCaPins);
    } finally {
      delete process.env.BETTER_COMPUTE_GATEWAY_URL;
    }
  });
});

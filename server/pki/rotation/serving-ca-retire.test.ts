import { randomBytes, X509Certificate } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../../agent/keys';
import { GATEWAY_CREDENTIALS_PATH } from '../../../protocol/gateway-credentials-wire';
import { createMigratedDatabase, dropDatabase } from '../../../test/db';
import { failure } from '../../../test/fixtures';
import { principalOf } from '../../authz/principal';
import { createDb, type Db } from '../../db/client';
import { createPgPool } from '../../db/pg';
import { GatewayCredentialsService } from '../../gateway-credentials/credentials-service';
import { recordGatewayCall } from '../../gateway-credentials/gateway-calls';
import { voucherFromServingChain } from '../../gateway/gateway';
import { newId } from '../../ids';
import { loadCurrentPkiRuntime } from '../../join/join-runtime';
import { vouchHeaders, VOUCH_HEADER } from '../../vouching/vouch';
import { ensureRootTenant } from '../../tenants/tenants';
import { initPki } from '../bundle/store';
import { issueGatewayCertificate } from '../issuance/gateway';
import { activateRotation, prepareRotation, retireRotation, rotationStatus } from './rotation';

// Retiring the serving CA must not strand a gateway: one that still vouches with a leaf of the old CA could never
// fetch its next leaf once the old CA is trusted nowhere. The retirement is refused while such a gateway was seen
// within the last minute and its new leaf has not called since, unless forced with a reason (audited).

// The bundle is a singleton row, so this file works in a database of its own.
const name = `pki_serving_retire_${randomBytes(4).toString('hex')}`;
const secret = 'a-long-enough-test-secret-0123456789-serving-retire';
const PATH = `/api/compute${GATEWAY_CREDENTIALS_PATH}`;
let url: string;
let db: Db;
let pool: pg.Pool;
let root: ReturnType<typeof principalOf>;
let service: GatewayCredentialsService;
const savedSecret = process.env.BETTER_COMPUTE_SECRET;

beforeAll(async () => {
  url = await createMigratedDatabase(name);
  db = createDb(url, { max: 6 });
  pool = createPgPool(url, 3);
  const tenant = await ensureRootTenant(db);
  root = principalOf('operator', newId('op'), [[tenant.id, 'admin']]);
  await initPki(db, { trustDomain: 'serving-retire.example.com', secret });
  process.env.BETTER_COMPUTE_SECRET = secret;
  // The API's credentials service on this database, recording each call as the composition root does.
  service = new GatewayCredentialsService({
    loadRuntime: () => loadCurrentPkiRuntime(db),
    limit: { hit: async () => ({ allowed: true, retryAfterSeconds: 0 }) },
    record: (call) => recordGatewayCall(pool, call),
  });
}, 120_000);

afterAll(async () => {
  process.env.BETTER_COMPUTE_SECRET = savedSecret;
  await pool?.end();
  await db?.$disconnect();
  await dropDatabase(name);
});

const step = { secret };
type Gateway = { chainPem: string; keyPem: string };

/** A gateway serving a leaf of the serving CA in use now, with `names`. */
async function gatewayOnCurrentCa(names: string[]): Promise<Gateway> {
  const runtime = (await loadCurrentPkiRuntime(db))!;
  const cert = issueGatewayCertificate({ servingCa: runtime.servingCa! }, { sans: names });
  return { chainPem: cert.chainPem, keyPem: cert.privateKeyPem };
}

/** One credentials call, as the gateway's follower makes it; the gateway it becomes when the answer has a chain. */
async function call(gateway: Gateway): Promise<{ status: number; next: Gateway | null }> {
  const key = generateNodeKeyAndCsr();
  const body = Buffer.from(JSON.stringify({ csr: key.csrDer.toString('base64'), trustVersion: 0 }));
  const headers = vouchHeaders(voucherFromServingChain(gateway.chainPem, gateway.keyPem), null, body, PATH);
  const reply = await service.answer({ body, vouch: headers[VOUCH_HEADER], peer: undefined, path: PATH });
  if (reply.status !== 200) return { status: reply.status, next: null };
  const chain = (JSON.parse(reply.body.toString()) as { servingChain: [string, string] | null }).servingChain;
  const pem = (b64: string) => new X509Certificate(Buffer.from(b64, 'base64')).toString();
  return { status: 200, next: chain ? { chainPem: chain.map(pem).join(''), keyPem: key.privateKeyPem } : null };
}

const servingCaStatus = async () => (await rotationStatus(db, root)).keys.find((k) => k.kind === 'serving-ca')!;
/** Moves every recorded call back by `seconds`, as if made that long ago. */
const age = (seconds: number) =>
  db.$executeRaw`UPDATE gateway_credential_calls SET last_seen = last_seen - make_interval(secs => ${seconds}), first_seen = first_seen - make_interval(secs => ${seconds})`;

// Every step opens and seals the bundle with scrypt N=2^17: seconds each on a busy machine.
describe('retiring the serving CA', { timeout: 180_000 }, () => {
  it('is refused while a gateway seen within the minute still vouches with an old leaf, and allowed once its new leaf calls', async () => {
    const up = await gatewayOnCurrentCa(['gw-up.example.com', '10.0.0.7']);
    const longGone = await gatewayOnCurrentCa(['gw-gone.example.com']);
    expect((await call(longGone)).status).toBe(200);
    await age(3600); // last seen an hour ago: down, and counted nowhere
    await prepareRotation(db, root, { kind: 'serving-ca', ...step });
    expect((await call(up)).next).toBeNull(); // prepared: its leaf stays
    const activated = await activateRotation(db, root, { kind: 'serving-ca', ...step });
    // Activated: its last call was with the old CA's leaf, and it has not fetched a new one yet.
    expect(activated.status.gatewaysOnPrevious).toBe(1);
    const refused = await failure(retireRotation(db, root, { kind: 'serving-ca', ...step }));
    expect(refused.code).toBe('INVALID_STATE');
    expect(refused.message).toMatch(
      /^1 gateway\(s\) seen in the last 60 seconds still serve a leaf of the previous serving CA \(last seen \d{4}-/,
    );
    expect(refused.message).toContain('gw-up.example.com');
    expect(refused.message).toContain('--force --reason');

    // Its next call fetches a leaf of the new CA; until that leaf calls, it still counts (it may not have swapped).
    const next = (await call(up)).next!;
    expect(next).not.toBeNull();
    expect((await servingCaStatus()).gatewaysOnPrevious).toBe(1);
    expect((await failure(retireRotation(db, root, { kind: 'serving-ca', ...step }))).code).toBe('INVALID_STATE');

    // The gateway serves its new leaf and calls with it: nothing would be stranded.
    expect(await call(next)).toEqual({ status: 200, next: null });
    expect((await servingCaStatus()).gatewaysOnPrevious).toBe(0);
    const retired = await retireRotation(db, root, { kind: 'serving-ca', ...step });
    expect(retired.phase).toBe('retired');
    expect(retired.status.gatewaysOnPrevious).toBeUndefined();
    const row = await db.pkiRotation.findFirstOrThrow({ where: { kind: 'serving-ca', phase: 'retired' } });
    expect(row.forcedReason).toBeNull();
    // The old leaf is refused from now on; the new one is answered.
    expect((await call(up)).status).toBe(403);
    expect((await call(next)).status).toBe(200);
  });

  it('counts an old leaf only while it was seen within the last minute', async () => {
    await age(3600); // the gateways of the tests before are long gone
    const gateway = await gatewayOnCurrentCa(['gw-window.example.com']);
    expect((await call(gateway)).status).toBe(200);
    await prepareRotation(db, root, { kind: 'serving-ca', ...step });
    await activateRotation(db, root, { kind: 'serving-ca', ...step });
    expect((await servingCaStatus()).gatewaysOnPrevious).toBe(1);
    await age(61);
    expect((await servingCaStatus()).gatewaysOnPrevious).toBe(0);
    expect((await retireRotation(db, root, { kind: 'serving-ca', ...step })).phase).toBe('retired');
  });

  it('is retired by --force with a reason, audited with the gateways it strands', async () => {
    await age(3600);
    const gateway = await gatewayOnCurrentCa(['gw-stuck.example.com']);
    await prepareRotation(db, root, { kind: 'serving-ca', ...step });
    await activateRotation(db, root, { kind: 'serving-ca', ...step });
    expect((await call(gateway)).next).not.toBeNull(); // it fetched a new leaf but never served it
    expect((await servingCaStatus()).gatewaysOnPrevious).toBe(1);
    expect((await failure(retireRotation(db, root, { kind: 'serving-ca', force: true, ...step }))).code).toBe('INVALID_ARGUMENT');
    const retired = await retireRotation(db, root, { kind: 'serving-ca', force: true, reason: 'gateway decommissioned', ...step });
    expect(retired.phase).toBe('retired');
    const row = await db.pkiRotation.findFirstOrThrow({ where: { kind: 'serving-ca', phase: 'retired' }, orderBy: { retiredAt: 'desc' } });
    expect(row.forcedReason).toBe('gateway decommissioned');
    const audit = await db.auditEntry.findFirstOrThrow({
      where: { resource: 'compute-pki/serving-ca', action: 'pki.rotation.retired' },
      orderBy: { id: 'desc' },
    });
    expect(audit.data).toMatchObject({ forced: true, reason: 'gateway decommissioned', gatewaysOnPrevious: 1 });
  });
});

import { describe, expect, it } from 'vitest';
import { testDb } from '../../../test/db';
import { createTestTenant, failure } from '../../../test/fixtures';
import { insertApiKey } from '../../api-keys/api-keys';
import { principalOf } from '../../authz/principal';
import { handleComputeRequest } from '../../entry/compute';
import { newId } from '../../ids';
import { ensureRootTenant } from '../../tenants/tenants';
import { PKI_KEY_KINDS } from '../../pki/rotation/kinds';
import { createCaller } from '../root';
import { toDomainError } from '../trpc';

const base = 'http://test.local/api/compute';
const call = (path: string, key: string, body?: unknown) =>
  handleComputeRequest(
    new Request(base + path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
    { db: testDb(), sessionOperatorId: async () => null },
  );

const STEPS = ['prepare', 'activate', 'retire'] as const;

describe('pki.rotation: tRPC and REST', () => {
  it('answers ACCESS_DENIED to every caller but a root admin, before it reads the input', async () => {
    const db = testDb();
    const root = await ensureRootTenant(db);
    const t = await createTestTenant(db, { label: 'pki-rot' });
    // A tenant admin, and members of the root tenant below admin: none may rotate or read the PKI state.
    const callers = [
      t.admin,
      principalOf('operator', newId('op'), [[root.id, 'operator']]),
      principalOf('operator', newId('op'), [[root.id, 'viewer']]),
    ];
    for (const principal of callers) {
      const caller = createCaller({ db, principal });
      expect(await failure(caller.pki.rotation.status())).toMatchObject({ code: 'ACCESS_DENIED' });
      for (const step of STEPS) {
        expect(await failure(caller.pki.rotation[step]({ kind: 'node-ca' }))).toMatchObject({ code: 'ACCESS_DENIED' });
        // A bad kind is not named to them either: the ladder refuses before the input is parsed.
        expect(await failure(caller.pki.rotation[step]({ kind: 'bogus' } as never))).toMatchObject({ code: 'ACCESS_DENIED' });
      }
    }
    expect(await failure(createCaller({ db, principal: null }).pki.rotation.status())).toMatchObject({ code: 'UNAUTHENTICATED' });

    const { key } = await insertApiKey(db, { tenantId: t.tenantId, role: 'admin', name: 'not-root' }, 'test');
    const status = await call('/v1/pki/rotation', key);
    expect(status.status).toBe(403);
    expect(await status.json()).toMatchObject({ code: 'ACCESS_DENIED' });
    for (const step of STEPS) {
      const answer = await call(`/v1/pki/rotation/node-ca/${step}`, key, {});
      expect(answer.status, step).toBe(403);
      expect(await answer.json()).toMatchObject({ code: 'ACCESS_DENIED' });
    }
  });

  it('answers INVALID_ARGUMENT to a root admin for a bad kind or bad input', async () => {
    const db = testDb();
    const root = await ensureRootTenant(db);
    const { key } = await insertApiKey(db, { tenantId: root.id, role: 'admin', name: 'pki-rot-root' }, 'test');
    const bad = async (path: string, body: unknown, field: string) => {
      const answer = await call(path, key, body);
      expect(answer.status, `${path} ${JSON.stringify(body).slice(0, 80)}`).toBe(400);
      expect(await answer.json()).toMatchObject({ code: 'INVALID_ARGUMENT', field });
    };
    for (const step of STEPS) await bad(`/v1/pki/rotation/root-ca/${step}`, {}, 'kind');
    await bad('/v1/pki/rotation/node-ca/activate', { force: true }, 'force');
    await bad('/v1/pki/rotation/node-ca/retire', { force: true }, 'reason');
    await bad('/v1/pki/rotation/node-ca/retire', { force: true, reason: '   ' }, 'reason');
    await bad('/v1/pki/rotation/node-ca/retire', { force: true, reason: 'x'.repeat(501) }, 'reason');
    await bad('/v1/pki/rotation/node-ca/retire', { force: true, reason: 'line\nbreak' }, 'reason');
    await bad('/v1/pki/rotation/node-ca/retire', { reason: 'without force' }, 'force');
    await bad('/v1/pki/rotation/node-ca/prepare', { from: { privateKeyPem: 'not a pem' } }, 'from.privateKeyPem');
    const pemKey = '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n';
    await bad('/v1/pki/rotation/node-ca/prepare', { from: { privateKeyPem: pemKey + 'A'.repeat(16_384) } }, 'from.privateKeyPem');
    await bad('/v1/pki/rotation/node-ca/prepare', { from: { privateKeyPem: pemKey, certificatePem: 'x' } }, 'from.certificatePem');
    await bad('/v1/pki/rotation/node-ca/prepare', { from: { privateKeyPem: pemKey, extra: 1 } }, 'from');
    // The body cap of prepare: an imported key fits, a flood does not get read.
    const flood = await call('/v1/pki/rotation/node-ca/prepare', key, { from: { privateKeyPem: 'A'.repeat(300_000) } });
    expect(flood.status).toBe(413);

    const caller = createCaller({ db, principal: principalOf('operator', newId('op'), [[root.id, 'admin']]) });
    expect(await failure(caller.pki.rotation.activate({ kind: 'intermediate' } as never))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'kind',
    });
    expect(await failure(caller.pki.rotation.status({ extra: true } as never))).toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('lets a root admin (a console session or a root API key) past the ladder and the input check to the step itself', async () => {
    const db = testDb();
    const root = await ensureRootTenant(db);
    const caller = createCaller({ db, principal: principalOf('operator', newId('op'), [[root.id, 'admin']]) });
    const { key } = await insertApiKey(db, { tenantId: root.id, role: 'admin', name: 'pki-rot-root-2' }, 'test');
    const routerRefusals = ['ACCESS_DENIED', 'INVALID_ARGUMENT', 'UNAUTHENTICATED'];
    // Activate with nothing prepared and retire with nothing active change nothing, whatever the step decides.
    for (const kind of PKI_KEY_KINDS) {
      for (const step of ['activate', 'retire'] as const) {
        const decided = await caller.pki.rotation[step]({ kind }).then(
          () => 'OK',
          (error: unknown) => toDomainError(error)?.code ?? 'INTERNAL',
        );
        expect(routerRefusals, `${step} ${kind}`).not.toContain(decided);
        const answer = await call(`/v1/pki/rotation/${kind}/${step}`, key, {});
        expect([400, 401, 403], `REST ${step} ${kind}`).not.toContain(answer.status);
      }
    }
  });
});

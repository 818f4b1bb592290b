import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { handleTrpcRequest } from '../api/trpc-http';
import { bootstrapFirstStart } from '../boot/bootstrap';
import { createDb } from '../db/client';
import { createMigratedDatabase } from '../../test/db';
import { authenticateOperator, createOperator, resetOperatorPassword } from './operators';

const ONE_TIME = 'printed-one-time-password';
const CHOSEN = 'a-password-i-chose-myself';

async function oneTimeOperator() {
  const db = testDb();
  const t = await createTestTenant(db);
  const email = `first-${randomBytes(4).toString('hex')}@example.com`;
  const { id } = await createOperator(db, {
    email,
    name: 'First',
    password: ONE_TIME,
    tenantId: t.tenantId,
    role: 'admin',
    passwordChangeRequired: true,
  });
  return { t, email, id };
}

/** A request of a console session (claim) through the real tRPC HTTP handler, as the browser sends it. */
async function call(claim: { operatorId: string; sessionVersion: number }, kind: 'query' | 'mutation', path: string, input: unknown) {
  const request =
    kind === 'query'
      ? new Request(`http://localhost:3000/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify(input))}`)
      : new Request(`http://localhost:3000/api/trpc/${path}`, {
          method: 'POST',
          body: JSON.stringify(input),
          headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
        });
  const response = await handleTrpcRequest(request, { db: testDb(), sessionOperatorId: async () => claim });
  return {
    status: response.status,
    body: (await response.json()) as { result?: { data: unknown }; error?: { message: string; data: { domainCode: string } } },
  };
}

describe('a printed one-time password', () => {
  it('allows nothing but choosing a new password; then the new one works, the old one and the old session do not', async () => {
    const { t, email, id } = await oneTimeOperator();
    const signedIn = await authenticateOperator(testDb(), email, ONE_TIME);
    expect(signedIn).toMatchObject({ id, passwordChangeRequired: true });
    const claim = { operatorId: id, sessionVersion: signedIn!.sessionVersion };

    for (const [kind, path, input] of [
      ['query', 'tenants.list', {}],
      ['query', 'pools.list', { tenantId: t.tenantId }],
      ['mutation', 'sites.create', { tenantId: t.tenantId, name: 'not-yet' }],
      ['mutation', 'apiKeys.create', { tenantId: t.tenantId, role: 'admin', name: 'sneaky' }],
    ] as const) {
      const refused = await call(claim, kind, path, input);
      expect([path, refused.status, refused.body.error?.data.domainCode]).toEqual([path, 403, 'ACCESS_DENIED']);
      expect(refused.body.error?.message).toMatch(/choose a new password first/i);
    }
    expect(await testDb().apiKey.count({ where: { tenantId: t.tenantId } })).toBe(0);

    // A wrong current password or a short new one changes nothing.
    expect(
      (await call(claim, 'mutation', 'account.changePassword', { currentPassword: 'wrong-password-123', newPassword: CHOSEN })).body.error
        ?.data.domainCode,
    ).toBe('INVALID_ARGUMENT');
    expect(
      (await call(claim, 'mutation', 'account.changePassword', { currentPassword: ONE_TIME, newPassword: 'short' })).body.error?.data
        .domainCode,
    ).toBe('INVALID_ARGUMENT');
    expect(
      (await call(claim, 'mutation', 'account.changePassword', { currentPassword: ONE_TIME, newPassword: ONE_TIME })).body.error?.data
        .domainCode,
    ).toBe('INVALID_ARGUMENT');

    const changed = await call(claim, 'mutation', 'account.changePassword', { currentPassword: ONE_TIME, newPassword: CHOSEN });
    expect(changed).toEqual({ status: 200, body: { result: { data: { changed: true } } } });
    // The session that changed it has ended (as every other one); the new password signs in with full rights.
    expect((await call(claim, 'query', 'tenants.list', {})).body.error?.data.domainCode).toBe('UNAUTHENTICATED');
    expect(await authenticateOperator(testDb(), email, ONE_TIME)).toBeNull();
    const again = await authenticateOperator(testDb(), email, CHOSEN);
    expect(again).toMatchObject({ id, passwordChangeRequired: false });
    const listed = await call({ operatorId: id, sessionVersion: again!.sessionVersion }, 'query', 'pools.list', { tenantId: t.tenantId });
    expect(listed.status).toBe(200);
    expect(
      await testDb().auditEntry.count({
        where: { tenantId: t.tenantId, action: 'operator.password-changed', resource: `compute-operator/${id}` },
      }),
    ).toBe(1);
  });

  it('signs out everywhere through account.signOutEverywhere, refused to API keys', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const email = `out-${randomBytes(4).toString('hex')}@example.com`;
    const { id } = await createOperator(db, { email, name: 'Out', password: CHOSEN, tenantId: t.tenantId, role: 'viewer' });
    const first = { operatorId: id, sessionVersion: (await authenticateOperator(db, email, CHOSEN))!.sessionVersion };
    expect((await call(first, 'query', 'pools.list', { tenantId: t.tenantId })).status).toBe(200);
    expect(await call(first, 'mutation', 'account.signOutEverywhere', {})).toEqual({
      status: 200,
      body: { result: { data: { signedOut: true } } },
    });
    expect((await call(first, 'query', 'pools.list', { tenantId: t.tenantId })).body.error?.data.domainCode).toBe('UNAUTHENTICATED');
    const { createCaller } = await import('../api/root');
    await expect(createCaller({ db, principal: { ...t.admin, kind: 'api-key' } }).account.signOutEverywhere()).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
  });

  it('is what operators reset-password --local gives: one-time in the same way', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const email = `reset-${randomBytes(4).toString('hex')}@example.com`;
    const { id } = await createOperator(db, { email, name: 'Op', password: CHOSEN, tenantId: t.tenantId, role: 'viewer' });
    expect(await authenticateOperator(db, email, CHOSEN)).toMatchObject({ passwordChangeRequired: false });
    const printed = await resetOperatorPassword(db, email);
    const signedIn = await authenticateOperator(db, email, printed);
    expect(signedIn).toMatchObject({ passwordChangeRequired: true });
    const refused = await call({ operatorId: id, sessionVersion: signedIn!.sessionVersion }, 'query', 'pools.list', {
      tenantId: t.tenantId,
    });
    expect(refused.body.error?.data.domainCode).toBe('ACCESS_DENIED');
  });

  it('is what the first start prints, for the email BETTER_COMPUTE_FIRST_ADMIN_EMAIL names', async () => {
    const url = await createMigratedDatabase('boot_first_admin_email');
    const db = createDb(url, { max: 2 });
    try {
      const first = await bootstrapFirstStart(db, {
        secret: 'a-development-secret-0123456789-abcdefghijklmnop',
        trustDomain: 'dev.example.com',
        firstAdminEmail: 'ops-lead@example.com',
      });
      expect(first.firstAdmin?.email).toBe('ops-lead@example.com');
      expect(await authenticateOperator(db, 'ops-lead@example.com', first.firstAdmin!.password)).toMatchObject({
        passwordChangeRequired: true,
      });
    } finally {
      await db.$disconnect();
    }
  });
});

import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createApiContext } from '../api/context';
import { createCaller } from '../api/root';
import { createOperator, loadOperatorPrincipal } from '../operators/operators';
import { authenticateApiKey, createApiKey, listApiKeys } from './api-keys';

describe('API keys', () => {
  it('expire when their lifetime is over, and are listed with creator, last use and expiry', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const email = `keys-${randomBytes(4).toString('hex')}@example.com`;
    const { id } = await createOperator(db, {
      email,
      name: 'Keys',
      password: 'correct-horse-battery',
      tenantId: t.tenantId,
      role: 'admin',
    });
    const admin = (await loadOperatorPrincipal(db, id))!;
    const created = await createApiKey(db, admin, { tenantId: t.tenantId, role: 'viewer', name: 'ci', ttlSeconds: 7 * 86_400 });
    expect(created).toMatchObject({ createdBy: admin.actor, createdByEmail: email, lastUsedAt: null });
    expect((Date.parse(created.expiresAt!) - Date.parse(created.createdAt)) / 86_400_000).toBeCloseTo(7, 2);
    const forever = await createApiKey(db, admin, { tenantId: t.tenantId, role: 'viewer', name: 'forever' });
    expect(forever.expiresAt).toBeNull();

    expect(await authenticateApiKey(db, created.key)).toMatchObject({ kind: 'api-key', id: created.id });
    const listed = await listApiKeys(db, admin, { tenantId: t.tenantId });
    expect(listed.find((k) => k.id === created.id)).toMatchObject({
      createdByEmail: email,
      lastUsedAt: expect.any(String),
      expiresAt: created.expiresAt,
    });
    expect(listed.find((k) => k.id === forever.id)).toMatchObject({ lastUsedAt: null });

    await db.apiKey.update({ where: { id: created.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await authenticateApiKey(db, created.key)).toBeNull();
    const ctx = await createApiContext(db, new Headers({ authorization: `Bearer ${created.key}` }), async () => null);
    expect([ctx.principal, ctx.authError?.code]).toEqual([null, 'UNAUTHENTICATED']);
    expect(await authenticateApiKey(db, forever.key)).not.toBeNull();
  });

  it('refuse a lifetime outside 1 hour to 400 days, naming the field', async () => {
    const t = await createTestTenant(testDb());
    const caller = createCaller({ db: testDb(), principal: t.admin });
    for (const ttlSeconds of [60, 401 * 86_400, 1.5]) {
      await expect(caller.apiKeys.create({ tenantId: t.tenantId, role: 'viewer', name: 'x', ttlSeconds })).rejects.toMatchObject({
        code: 'BAD_REQUEST',
        message: expect.stringMatching(/^ttlSeconds: /),
      });
    }
  });
});

import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createCaller } from '../api/root';
import { authorize, resource } from './authorize';
import { principalOf } from './principal';

describe('authorize', () => {
  it('lets the owner tenant act and returns the owner', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    await expect(authorize(db, t.admin, 'compute:join-tokens:create', resource.pool(t.pool.id))).resolves.toBe(t.tenantId);
    await expect(authorize(db, t.operator, 'compute:join-tokens:create', resource.pool(t.pool.id))).resolves.toBe(t.tenantId);
  });

  it('answers NOT_FOUND to another tenant, exactly as for a resource that does not exist', async () => {
    const db = testDb();
    const [a, b] = await Promise.all([createTestTenant(db), createTestTenant(db)]);
    const other = await authorize(db, b.admin, 'compute:pools:read', resource.pool(a.pool.id)).catch((e) => e);
    const missing = await authorize(db, b.admin, 'compute:pools:read', resource.pool('pool_doesnotexist')).catch((e) => e);
    expect(other.code).toBe('NOT_FOUND');
    expect(missing.code).toBe('NOT_FOUND');
    expect(other.message.replace(a.pool.id, 'X')).toBe(missing.message.replace('pool_doesnotexist', 'X'));
  });

  it('refuses a member whose role lacks the action with ACCESS_DENIED naming it', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const error = await authorize(db, t.viewer, 'compute:join-tokens:create', resource.pool(t.pool.id)).catch((e) => e);
    expect(error.code).toBe('ACCESS_DENIED');
    expect(error.message).toContain('compute:join-tokens:create');
    await expect(authorize(db, t.viewer, 'compute:pools:read', resource.pool(t.pool.id))).resolves.toBe(t.tenantId);
    const operatorError = await authorize(db, t.operator, 'compute:pools:manage', resource.tenant(t.tenantId)).catch((e) => e);
    expect(operatorError.code).toBe('ACCESS_DENIED');
  });

  it('applies the same decisions through the API procedures', async () => {
    const db = testDb();
    const [a, b] = await Promise.all([createTestTenant(db), createTestTenant(db)]);
    const asOther = createCaller({ db, principal: b.admin });
    await expect(asOther.pools.get({ tenantId: a.tenantId, poolId: a.pool.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    // Naming your own tenant with another tenant's pool is still NOT_FOUND.
    await expect(asOther.pools.get({ tenantId: b.tenantId, poolId: a.pool.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const asViewer = createCaller({ db, principal: a.viewer });
    await expect(asViewer.pools.archive({ tenantId: a.tenantId, poolId: a.pool.id })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(asViewer.pools.get({ tenantId: a.tenantId, poolId: a.pool.id })).resolves.toMatchObject({ id: a.pool.id });
    const anonymous = createCaller({ db, principal: null });
    await expect(anonymous.pools.list({ tenantId: a.tenantId })).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    const noMembership = createCaller({ db, principal: principalOf('operator', 'op_nobody', []) });
    await expect(noMembership.pools.list({ tenantId: a.tenantId })).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });
});

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { createCaller } from '../api/root';
import { newId } from '../ids';

describe('pools.counts', () => {
  it('counts nodes by state and live tokens per pool, for a viewer too, and nothing of other tenants', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const other = await createTestTenant(db);
    const admin = createCaller({ db, principal: t.admin });
    const mint = (poolId = t.poolId) => admin.joinTokens.create({ tenantId: t.tenantId, poolId, ttlSeconds: 600, idempotencyKey: randomUUID() });
    await mint();
    await mint();
    const revoked = await mint();
    await admin.joinTokens.revoke({ tenantId: t.tenantId, poolId: t.poolId, tokenId: revoked.id });
    const node = (state: string, tenantId = t.tenantId, siteId = t.siteId, poolId = t.poolId) =>
      db.node.create({ data: { id: newId('node'), tenantId, siteId, poolId, role: 'node', state, trust: 'tenant-controlled', attestor: 'join-token' } });
    await node('ready');
    await node('ready');
    await node('adopting');
    await node('ready', other.tenantId, other.siteId, other.poolId);
    const second = await t.newPool();

    const { items } = await createCaller({ db, principal: t.viewer }).pools.counts({ tenantId: t.tenantId });
    expect(items).toEqual([{ poolId: t.poolId, nodesByState: { ready: 2, adopting: 1 }, liveTokens: 2 }]);
    expect(items.find((c) => c.poolId === second)).toBeUndefined();
    expect((await failure(createCaller({ db, principal: other.admin }).pools.counts({ tenantId: t.tenantId }))).code).toBe('NOT_FOUND');
  });
});

import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { DAY, insertNode } from '../../test/stale-nodes';
import { createCaller } from '../api/root';

const db = testDb();

describe('pools.setStaleNodesPolicy, pools.staleNodes and pools.applyStaleNodes', () => {
  it('validates the days (1 to 365, both given), is admin-only to set and apply, and audits the change', async () => {
    const t = await createTestTenant(db, { label: 'stale-api' });
    const admin = createCaller({ db, principal: t.admin });
    const ref = { tenantId: t.tenantId, poolId: t.poolId };
    for (const staleNodes of [
      { cordonAfterDays: 0, retireAfterDays: 5 },
      { cordonAfterDays: 7, retireAfterDays: 0 },
      { cordonAfterDays: 366, retireAfterDays: 5 },
      { cordonAfterDays: 1.5, retireAfterDays: 5 },
      { cordonAfterDays: 7 },
    ]) {
      expect(await failure(admin.pools.setStaleNodesPolicy({ ...ref, staleNodes: staleNodes as never }))).toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    }
    for (const role of ['viewer', 'operator'] as const) {
      const caller = createCaller({ db, principal: t.as(role) });
      expect(
        await failure(caller.pools.setStaleNodesPolicy({ ...ref, staleNodes: { cordonAfterDays: 7, retireAfterDays: 7 } })),
      ).toMatchObject({
        code: 'ACCESS_DENIED',
      });
      expect(await failure(caller.pools.applyStaleNodes(ref))).toMatchObject({ code: 'ACCESS_DENIED' });
    }
    expect(await failure(admin.pools.applyStaleNodes(ref))).toMatchObject({ code: 'INVALID_STATE' });

    const pool = await admin.pools.setStaleNodesPolicy({ ...ref, staleNodes: { cordonAfterDays: 3, retireAfterDays: 1 } });
    expect(pool.policy.staleNodes).toEqual({ cordonAfterDays: 3, retireAfterDays: 1 });
    expect(await db.auditEntry.findFirst({ where: { tenantId: t.tenantId, action: 'pool.updated' } })).toMatchObject({
      actor: t.admin.actor,
      data: { staleNodes: { cordonAfterDays: 3, retireAfterDays: 1 } },
    });
    // An archived pool's policy still applies to its nodes: it may be removed, not set anew.
    await admin.pools.archive(ref);
    expect(
      await failure(admin.pools.setStaleNodesPolicy({ ...ref, staleNodes: { cordonAfterDays: 3, retireAfterDays: 2 } })),
    ).toMatchObject({
      code: 'INVALID_STATE',
    });
    expect((await admin.pools.setStaleNodesPolicy({ ...ref, staleNodes: null })).policy).not.toHaveProperty('staleNodes');
    // Another tenant sees no such pool.
    const other = await createTestTenant(db, { label: 'stale-api-iso' });
    expect(await failure(createCaller({ db, principal: other.admin }).pools.staleNodes(ref))).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('the dry run lists up to limit and counts all; apply does what it listed and names the operator', async () => {
    const t = await createTestTenant(db, { label: 'stale-api' });
    const admin = createCaller({ db, principal: t.admin });
    const ref = { tenantId: t.tenantId, poolId: t.poolId };
    await admin.pools.setStaleNodesPolicy({ ...ref, staleNodes: { cordonAfterDays: 2, retireAfterDays: 5 } });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await insertNode(db, t, t.poolId, new Date(Date.now() - (3 + i) * DAY))).id);
    const plan = await createCaller({ db, principal: t.viewer }).pools.staleNodes({ ...ref, limit: 2 });
    expect(plan.counts).toEqual({ cordon: 3, retire: 0 });
    expect(plan.items.map((s) => s.nodeId)).toEqual([...ids].sort().slice(0, 2));
    expect(await admin.pools.applyStaleNodes(ref)).toEqual({ poolId: t.poolId, cordoned: 3, retired: 0 });
    expect((await admin.pools.staleNodes(ref)).counts).toEqual({ cordon: 0, retire: 0 });
    expect(await db.auditEntry.findFirst({ where: { tenantId: t.tenantId, action: 'pool.stale-nodes-applied' } })).toMatchObject({
      actor: t.admin.actor,
      data: { cordoned: 3, retired: 0 },
    });
  });
});

import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { MAX_COMMAND_BATCH_NODES } from '../../protocol/api/command-schemas';
import { newId } from '../ids';
import { enqueueCommand } from './enqueue';
import { getBatch } from './queries';

// A batch's bounds: it selects at most MAX_COMMAND_BATCH_NODES nodes (more is refused before anything is
// written), and whoever could enqueue it can read it.

/** `count` nodes of the pool, written in one statement (no certificates: a batch would reject them all). */
async function insertNodes(t: { tenantId: string; siteId: string }, poolId: string, count: number) {
  const prefix = newId('node');
  await testDb().$executeRaw`
    INSERT INTO nodes (id, tenant_id, site_id, pool_id, role, state, trust, attestor)
    SELECT ${prefix} || 'x' || g, ${t.tenantId}, ${t.siteId}, ${poolId}, 'node', 'adopted', 'tenant-owned', 'join-token'
      FROM generate_series(1, ${count}::int) g`;
}

describe('command batches', () => {
  it(`refuses a filter that selects more than ${MAX_COMMAND_BATCH_NODES} nodes, writing nothing`, { timeout: 60_000 }, async () => {
    const t = await createTestTenant(testDb());
    const poolId = await t.newPool();
    await insertNodes(t, poolId, MAX_COMMAND_BATCH_NODES + 1);
    const refused = await failure(enqueueCommand(testDb(), t.operator, { tenantId: t.tenantId, matching: { poolId }, kind: 'bcd.doctor' }));
    expect(refused).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('at most 10,000') });
    expect(refused.message).toContain('10,001 nodes');
    expect(await testDb().commandBatch.count({ where: { tenantId: t.tenantId } })).toBe(0);
    expect(await testDb().nodeCommand.count({ where: { tenantId: t.tenantId } })).toBe(0);
    // A narrower filter is a batch as before.
    const small = await t.newPool();
    await insertNodes(t, small, 3);
    const { batch } = await enqueueCommand(testDb(), t.operator, { tenantId: t.tenantId, matching: { poolId: small }, kind: 'bcd.doctor' });
    expect(batch).toMatchObject({ total: 3, counts: { rejected: 3 } });
  });

  it("a pool's batch is read as the pool's: its creator reads it at once, other tenants never", async () => {
    const t = await createTestTenant(testDb());
    const poolId = await t.newPool();
    await insertNodes(t, poolId, 2);
    // A caller that holds the pool but not the tenant as a whole: the tenant's own authorization record is
    // absent, so only the pool decides (as a grant on the pool alone would).
    await testDb().authzResource.delete({ where: { resource: `compute-tenant/${t.tenantId}` } });
    const { batch } = await enqueueCommand(testDb(), t.operator, { tenantId: t.tenantId, matching: { poolId }, kind: 'bcd.doctor' });
    expect(batch).toMatchObject({ total: 2, selector: { poolId } });
    expect(await getBatch(testDb(), t.viewer, { batchId: batch!.id })).toMatchObject({ id: batch!.id, total: 2 });
    const other = await createTestTenant(testDb());
    expect(await failure(getBatch(testDb(), other.admin, { batchId: batch!.id }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await failure(getBatch(testDb(), other.admin, { tenantId: other.tenantId, batchId: batch!.id }))).toMatchObject({
      code: 'NOT_FOUND',
    });
  });
});

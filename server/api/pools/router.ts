import { requirePermission, router } from '../trpc';
import { archivePool, createPool, getPool, listPools, updatePool } from '../../pools/pools';
import { createPoolInput, listPoolsInput, poolList, poolRecord, poolRefInput, updatePoolInput } from '../../../protocol/api/pool-schemas';
import { countPools, poolCountsInput, poolCountsPage } from '../../pools/counts';
import { applyStaleNodesNow, planStaleNodes, setStaleNodesPolicy } from '../../pools/stale-plan';
import { setStaleNodesPolicyInput, staleNodesApplied, staleNodesInput, staleNodesPlan } from '../../../protocol/api/stale-nodes';

export const poolsRouter = router({
  create: requirePermission('compute:pools:manage')
    .input(createPoolInput)
    .output(poolRecord)
    .mutation(({ ctx, input }) => createPool(ctx.db, ctx.principal, input)),
  list: requirePermission('compute:pools:read')
    .input(listPoolsInput)
    .output(poolList)
    .query(async ({ ctx, input }) => ({ items: await listPools(ctx.db, ctx.principal, input) })),
  get: requirePermission('compute:pools:read')
    .input(poolRefInput)
    .output(poolRecord)
    .query(({ ctx, input }) => getPool(ctx.db, ctx.principal, input)),
  archive: requirePermission('compute:pools:manage')
    .input(poolRefInput)
    .output(poolRecord)
    .mutation(({ ctx, input }) => archivePool(ctx.db, ctx.principal, input)),
  update: requirePermission('compute:pools:manage')
    .input(updatePoolInput)
    .output(poolRecord)
    .mutation(({ ctx, input }) => updatePool(ctx.db, ctx.principal, input)),
  counts: requirePermission('compute:pools:read')
    .input(poolCountsInput)
    .output(poolCountsPage)
    .query(({ ctx, input }) => countPools(ctx.db, ctx.principal, input)),
  setStaleNodesPolicy: requirePermission('compute:pools:manage')
    .input(setStaleNodesPolicyInput)
    .output(poolRecord)
    .mutation(({ ctx, input }) => setStaleNodesPolicy(ctx.db, ctx.principal, input)),
  staleNodes: requirePermission('compute:pools:read')
    .input(staleNodesInput)
    .output(staleNodesPlan)
    .query(({ ctx, input }) => planStaleNodes(ctx.db, ctx.principal, input)),
  applyStaleNodes: requirePermission('compute:pools:manage')
    .input(staleNodesInput)
    .output(staleNodesApplied)
    .mutation(({ ctx, input }) => applyStaleNodesNow(ctx.db, ctx.principal, input)),
});

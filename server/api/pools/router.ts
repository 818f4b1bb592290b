import { router } from '../trpc';
import { domainList, domainMutation, domainQuery } from '../domain-procedure';
import { archivePool, createPool, getPool, listPools, updatePool } from '../../pools/pools';
import { createPoolInput, listPoolsInput, poolList, poolRecord, poolRefInput, updatePoolInput } from '../../../protocol/api/pool-schemas';
import { countPools, poolCountsInput, poolCountsPage } from '../../pools/counts';
import { applyStaleNodesNow, planStaleNodes, setStaleNodesPolicy } from '../../pools/stale-plan';
import { setStaleNodesPolicyInput, staleNodesApplied, staleNodesInput, staleNodesPlan } from '../../../protocol/api/stale-nodes';

export const poolsRouter = router({
  create: domainMutation('compute:pools:manage', createPoolInput, poolRecord, createPool),
  list: domainList('compute:pools:read', listPoolsInput, poolList, listPools),
  get: domainQuery('compute:pools:read', poolRefInput, poolRecord, getPool),
  archive: domainMutation('compute:pools:manage', poolRefInput, poolRecord, archivePool),
  update: domainMutation('compute:pools:manage', updatePoolInput, poolRecord, updatePool),
  counts: domainQuery('compute:pools:read', poolCountsInput, poolCountsPage, countPools),
  setStaleNodesPolicy: domainMutation('compute:pools:manage', setStaleNodesPolicyInput, poolRecord, setStaleNodesPolicy),
  staleNodes: domainQuery('compute:pools:read', staleNodesInput, staleNodesPlan, planStaleNodes),
  applyStaleNodes: domainMutation('compute:pools:manage', staleNodesInput, staleNodesApplied, applyStaleNodesNow),
});

import { requirePermission, router } from '../trpc';
import { domainMutation, domainQuery } from '../domain-procedure';
import { adoptNode, deleteNode, recheckNode, revokeNodeIdentity, setCordon } from '../../nodes/lifecycle';
import { getNode, listNodes } from '../../nodes/nodes';
import { bulkNodeAction } from '../../nodes/bulk';
import { nodeBulkInput, nodeBulkResult } from '../../../protocol/api/node-bulk-schemas';
import { listNodesInput, nodeDetail, nodeList, nodeRefInput, revokeResult } from '../../../protocol/api/node-schemas';
import { setNodeLabels } from '../../nodes/labels';
import { setNodeLabelsInput } from '../../../protocol/api/node-labels-schemas';

/** Nodes: read and lifecycle. Each is decided on the node's pool in the domain function. */
export const nodesRouter = router({
  list: domainQuery('compute:nodes:read', listNodesInput, nodeList, listNodes),
  get: domainQuery('compute:nodes:read', nodeRefInput, nodeDetail, getNode),
  adopt: domainMutation('compute:nodes:manage', nodeRefInput, nodeDetail, adoptNode),
  recheck: domainMutation('compute:nodes:manage', nodeRefInput, nodeDetail, recheckNode),
  cordon: requirePermission('compute:nodes:manage')
    .input(nodeRefInput)
    .output(nodeDetail)
    .mutation(({ ctx, input }) => setCordon(ctx.db, ctx.principal, input, true)),
  uncordon: requirePermission('compute:nodes:manage')
    .input(nodeRefInput)
    .output(nodeDetail)
    .mutation(({ ctx, input }) => setCordon(ctx.db, ctx.principal, input, false)),
  setLabels: domainMutation('compute:nodes:manage', setNodeLabelsInput, nodeDetail, setNodeLabels),
  revokeIdentity: domainMutation('compute:nodes:manage', nodeRefInput, revokeResult, revokeNodeIdentity),
  /** Bulk actions by ids or by filter, a page per call (see bulkNodeAction). */
  bulk: domainMutation('compute:nodes:manage', nodeBulkInput, nodeBulkResult, bulkNodeAction),
  delete: domainMutation('compute:nodes:manage', nodeRefInput, nodeDetail, deleteNode),
});

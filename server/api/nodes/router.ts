import { requirePermission, router } from '../trpc';
import { adoptNode, deleteNode, recheckNode, revokeNodeIdentity, setCordon } from '../../nodes/lifecycle';
import { getNode, listNodes } from '../../nodes/nodes';
import { bulkNodeAction } from '../../nodes/bulk';
import { nodeBulkInput, nodeBulkResult } from '../../../protocol/api/node-bulk-schemas';
import { listNodesInput, nodeDetail, nodeList, nodeRefInput, revokeResult } from '../../../protocol/api/node-schemas';
import { setNodeLabels } from '../../nodes/labels';
import { setNodeLabelsInput } from '../../../protocol/api/node-labels-schemas';

/** Nodes: read and lifecycle. Each is decided on the node's pool in the domain function. */
export const nodesRouter = router({
  list: requirePermission('compute:nodes:read')
    .input(listNodesInput)
    .output(nodeList)
    .query(({ ctx, input }) => listNodes(ctx.db, ctx.principal, input)),
  get: requirePermission('compute:nodes:read')
    .input(nodeRefInput)
    .output(nodeDetail)
    .query(({ ctx, input }) => getNode(ctx.db, ctx.principal, input)),
  adopt: requirePermission('compute:nodes:manage')
    .input(nodeRefInput)
    .output(nodeDetail)
    .mutation(({ ctx, input }) => adoptNode(ctx.db, ctx.principal, input)),
  recheck: requirePermission('compute:nodes:manage')
    .input(nodeRefInput)
    .output(nodeDetail)
    .mutation(({ ctx, input }) => recheckNode(ctx.db, ctx.principal, input)),
  cordon: requirePermission('compute:nodes:manage')
    .input(nodeRefInput)
    .output(nodeDetail)
    .mutation(({ ctx, input }) => setCordon(ctx.db, ctx.principal, input, true)),
  uncordon: requirePermission('compute:nodes:manage')
    .input(nodeRefInput)
    .output(nodeDetail)
    .mutation(({ ctx, input }) => setCordon(ctx.db, ctx.principal, input, false)),
  setLabels: requirePermission('compute:nodes:manage')
    .input(setNodeLabelsInput)
    .output(nodeDetail)
    .mutation(({ ctx, input }) => setNodeLabels(ctx.db, ctx.principal, input)),
  revokeIdentity: requirePermission('compute:nodes:manage')
    .input(nodeRefInput)
    .output(revokeResult)
    .mutation(({ ctx, input }) => revokeNodeIdentity(ctx.db, ctx.principal, input)),
  /** Bulk actions by ids or by filter, a page per call (see bulkNodeAction). */
  bulk: requirePermission('compute:nodes:manage')
    .input(nodeBulkInput)
    .output(nodeBulkResult)
    .mutation(({ ctx, input }) => bulkNodeAction(ctx.db, ctx.principal, input)),
  delete: requirePermission('compute:nodes:manage')
    .input(nodeRefInput)
    .output(nodeDetail)
    .mutation(({ ctx, input }) => deleteNode(ctx.db, ctx.principal, input)),
});

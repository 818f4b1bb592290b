import { z } from 'zod';
import { idOf } from './resource-names';
import { nodeFilterFields } from './node-filter';
import { labelsSchema } from './labels';

// Bulk actions on nodes: by ids, or by the fleet list's filter ("select all matching"), a page per call as
// the join-request queue's bulk decisions do. Shapes only: the console's client bundle imports this file.

/** How many nodes one call changes at most; a bulk action by filter repeats with `after` until `nextAfter` is null. */
export const NODE_BULK_PAGE = 50;

const labelKey = z.string().min(1).max(63);

export const NODE_BULK_ACTIONS = ['cordon', 'uncordon', 'revoke-identity', 'set-labels'] as const;
export type NodeBulkActionName = (typeof NODE_BULK_ACTIONS)[number];

/**
 * The nodes a bulk action takes: the filter (as the list takes it) and, optionally, the list's time, so a node
 * that joins after the operator counted them is not changed unseen.
 */
const nodeMatching = z.strictObject({ ...nodeFilterFields, createdUpTo: z.iso.datetime({ offset: true }).optional() });

/**
 * One action on the named nodes or on a page of the matching ones. `set-labels` merges `set` over each node's
 * labels and then removes the keys in `remove`; the other actions take neither. Flat (one object), so REST
 * reads it as one JSON body and the OpenAPI document shows its fields.
 */
export const nodeBulkInput = z
  .strictObject({
    tenantId: idOf('tnt'),
    action: z.enum(NODE_BULK_ACTIONS),
    nodeIds: z.array(idOf('node')).min(1).max(NODE_BULK_PAGE).optional(),
    matching: nodeMatching.optional(),
    /** With `matching`: the `nextAfter` of the previous call. */
    after: idOf('node').optional(),
    set: labelsSchema.optional(),
    remove: z.array(labelKey).max(32).optional(),
  })
  .refine((v) => (v.nodeIds === undefined) !== (v.matching === undefined), {
    message: 'name nodeIds, or matching (a filter), not both',
    path: ['nodeIds'],
  })
  .refine((v) => v.after === undefined || v.matching !== undefined, { message: 'after goes with matching', path: ['after'] })
  .refine((v) => (v.action === 'set-labels') === (v.set !== undefined || v.remove !== undefined), {
    message: 'set-labels takes set and/or remove; the other actions take neither',
    path: ['set'],
  })
  .refine((v) => v.action !== 'set-labels' || Object.keys(v.set ?? {}).length + (v.remove ?? []).length > 0, {
    message: 'set or remove at least one label',
    path: ['set'],
  });
export type NodeBulkInput = z.output<typeof nodeBulkInput>;

export const nodeBulkResult = z.object({
  /** Nodes this call changed (one audit row and event each). */
  changed: z.array(z.string()),
  /** Nodes already as asked (cordoned already, labels already so): nothing written. */
  unchanged: z.array(z.string()),
  /** Nodes left alone, and why (retired, not permitted, too many labels, gone). */
  skipped: z.array(z.object({ nodeId: z.string(), reason: z.string() })),
  /** With `matching`: pass as `after` for the next page; null when every matching node was taken. */
  nextAfter: z.string().nullable(),
});
export type NodeBulkResult = z.infer<typeof nodeBulkResult>;

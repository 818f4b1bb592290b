import { z } from 'zod';
import { idOf } from './resource-names';
import { labelsSchema } from './labels';

/**
 * `nodes.setLabels`: a change of one node's labels. `set` adds or overrides keys and `remove` drops keys
 * (after `set`); with `replace`, `set` is the whole set from now on (what the console's editor sends).
 */
export const setNodeLabelsInput = z.strictObject({
  tenantId: idOf('tnt'),
  nodeId: idOf('node'),
  set: labelsSchema.default({}),
  remove: z.array(z.string().min(1).max(63)).max(32).default([]),
  replace: z.boolean().default(false),
});
export type SetNodeLabelsInput = z.input<typeof setNodeLabelsInput>;

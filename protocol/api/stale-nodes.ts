import { z } from 'zod';
import { idOf } from './resource-names';

/** The longest either step of the stale-node policy may wait, in days. */
export const STALE_NODES_MAX_DAYS = 365;

const days = (what: string) =>
  z
    .number()
    .int(`${what} is a whole number of days`)
    .min(1, `${what} is at least 1 day`)
    .max(STALE_NODES_MAX_DAYS, `${what} is at most ${STALE_NODES_MAX_DAYS} days`);

/**
 * A pool's stale-node policy (`policy.staleNodes`, opt-in): a node disconnected for `cordonAfterDays` is
 * cordoned; still disconnected `retireAfterDays` after that cordon, it is retired (the delete path).
 */
export const staleNodesPolicySchema = z.strictObject({
  cordonAfterDays: days('cordonAfterDays'),
  retireAfterDays: days('retireAfterDays'),
});
export type StaleNodesPolicy = z.infer<typeof staleNodesPolicySchema>;

/** `pools.setStaleNodesPolicy`: sets the pool's policy, or turns it off with `null`. */
export const setStaleNodesPolicyInput = z.strictObject({
  tenantId: idOf('tnt'),
  poolId: idOf('pool'),
  staleNodes: staleNodesPolicySchema.nullable(),
});

/** `pools.staleNodes` (the dry run) and `pools.applyStaleNodes`. */
export const staleNodesInput = z.strictObject({
  tenantId: idOf('tnt'),
  poolId: idOf('pool'),
  /** How many nodes the dry run lists (the counts cover them all). */
  limit: z.number().int().min(1).max(1000).optional(),
});

const STALE_ACTIONS = ['cordon', 'retire'] as const;
const staleNodeStep = z.object({
  nodeId: z.string(),
  hostname: z.string().nullable(),
  action: z.enum(STALE_ACTIONS),
  /** When the node's last session ended. */
  disconnectedSince: z.string(),
  /** When the policy cordoned it (a retire step), else null. */
  staleCordonedAt: z.string().nullable(),
});
export type StaleNodeStep = z.infer<typeof staleNodeStep>;

export const staleNodesPlan = z.object({
  poolId: z.string(),
  policy: staleNodesPolicySchema.nullable(),
  /** The database clock the plan was read at. */
  evaluatedAt: z.string(),
  counts: z.object({ cordon: z.number().int(), retire: z.number().int() }),
  items: z.array(staleNodeStep),
});
export type StaleNodesPlan = z.infer<typeof staleNodesPlan>;

export const staleNodesApplied = z.object({
  poolId: z.string(),
  cordoned: z.number().int(),
  retired: z.number().int(),
});

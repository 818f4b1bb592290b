import { z } from 'zod';
import { idOf, resourceName } from './resource-names';
import { acceptanceCheckSpec } from '../acceptance-checks';
import { ekHashSchema, tpmPoolPolicySchema } from './tpm-settings';

const ATTESTORS = ['join-token', 'discovery', 'tpm', 'x509pop'] as const;
export const POOL_AGENTS = ['bcd', 'none'] as const;

const poolPolicy = z
  .object({
    joinAttestors: z.array(z.enum(ATTESTORS)).min(1).max(ATTESTORS.length).optional(),
    kubernetes: z.object({ platformOperated: z.boolean().optional() }).strict().optional(),
    /** Built-in checks bcd runs when the control plane asks over the session; a pass adopts the node. */
    acceptance: z.array(acceptanceCheckSpec).min(1).max(16).optional(),
    /** The tpm attestor: EK hashes admitted into this pool without an operator. */
    tpm: tpmPoolPolicySchema.optional(),
  })
  .strict();
export type PoolPolicy = z.infer<typeof poolPolicy>;

export const createPoolInput = z.strictObject({
  tenantId: idOf('tnt'),
  siteId: idOf('site'),
  name: resourceName,
  agent: z.enum(POOL_AGENTS),
  policy: poolPolicy.optional(),
  acceptanceChecks: z
    .array(z.string().regex(/^[a-z0-9][a-z0-9.-]{0,62}$/, 'use a check name like gpu-burn'))
    .max(32)
    .optional(),
});
export const listPoolsInput = z.strictObject({
  tenantId: idOf('tnt'),
  siteId: idOf('site').optional(),
  includeArchived: z.boolean().optional(),
});
/** `pools.update`: edits the pool's TPM EK allow-list (`policy.tpm.ekAllowList`) in place. */
export const updatePoolInput = z.strictObject({
  tenantId: idOf('tnt'),
  poolId: idOf('pool'),
  tpm: z.strictObject({
    addEkHashes: z.array(ekHashSchema).max(1000).optional(),
    removeEkHashes: z.array(ekHashSchema).max(1000).optional(),
  }),
});
export const poolRefInput = z.strictObject({ tenantId: idOf('tnt'), poolId: idOf('pool') });

export const poolRecord = z.object({
  id: z.string(),
  tenantId: z.string(),
  siteId: z.string(),
  name: z.string(),
  agent: z.enum(POOL_AGENTS),
  policy: poolPolicy,
  acceptanceChecks: z.array(z.string()),
  createdAt: z.string(),
  archivedAt: z.string().nullable(),
});
export type PoolRecord = z.infer<typeof poolRecord>;
export const poolList = z.object({ items: z.array(poolRecord) });

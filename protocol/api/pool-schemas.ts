import { z } from 'zod';
import { idOf, resourceName } from './resource-names';
import { acceptanceCheckSpec, BUILT_IN_CHECKS } from '../acceptance-checks';
import { ekHashSchema, tpmPoolPolicySchema } from './tpm-settings';
import { staleNodesPolicySchema } from './stale-nodes';

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
    /** Opt-in: disconnected nodes are cordoned, then retired (protocol/api/stale-nodes.ts). */
    staleNodes: staleNodesPolicySchema.optional(),
  })
  .strict();
export type PoolPolicy = z.infer<typeof poolPolicy>;

const builtInList = BUILT_IN_CHECKS.join(', ');
/**
 * `acceptanceChecks` names checks the agent runs, and each needs its settings in `policy.acceptance` (that is
 * what the agent is sent); a name the agent does not run would leave every new node of the pool waiting.
 */
export const createPoolInput = z
  .strictObject({
    tenantId: idOf('tnt'),
    siteId: idOf('site'),
    name: resourceName,
    agent: z.enum(POOL_AGENTS),
    policy: poolPolicy.optional(),
    acceptanceChecks: z
      .array(
        z
          .string()
          .max(64)
          .refine((name) => (BUILT_IN_CHECKS as readonly string[]).includes(name), `the agent runs only these checks: ${builtInList}`),
      )
      .max(32)
      .optional(),
  })
  .superRefine((input, ctx) => {
    const configured = new Set((input.policy?.acceptance ?? []).map((spec) => spec.check));
    (input.acceptanceChecks ?? []).forEach((name, index) => {
      if ((BUILT_IN_CHECKS as readonly string[]).includes(name) && !configured.has(name as never)) {
        ctx.addIssue({
          code: 'custom',
          path: ['acceptanceChecks', index],
          message: `${name} needs its settings in policy.acceptance, which is what the agent is sent`,
        });
      }
    });
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

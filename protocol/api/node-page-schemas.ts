import { z } from 'zod';

// What the node page shows beyond a list row: names instead of ids, the certificate's own role, and the
// admission (the join request that admitted the node and how it was decided). Separate from node-schemas.ts
// so the list's answer stays as small as it is.

/** How the admitting request was decided: by an operator (or their API key), by an approval rule, by an expected-machine import. */
const ADMISSION_DECIDERS = ['operator', 'rule', 'import'] as const;

const nodeAdmission = z.object({
  requestId: z.string(),
  attestor: z.string(),
  /** When the request asked, was decided and was used by the join that admitted the node. */
  askedAt: z.string(),
  decidedAt: z.string().nullable(),
  consumedAt: z.string().nullable(),
  decidedVia: z.enum(ADMISSION_DECIDERS).nullable(),
  /** The deciding actor (`operator:…`, `api-key:…`, `rule:…`, `import:…`) and its name when one is known. */
  decidedBy: z.string().nullable(),
  decidedByName: z.string().nullable(),
  /** Why: the operator's reason, or the rule's name. */
  reason: z.string().nullable(),
  requiredApprovals: z.number().int(),
  /** On a two-person site, the first of the two approvals (the deciding one is `decidedBy`). */
  firstApproval: z.object({ by: z.string(), byName: z.string().nullable(), at: z.string() }).nullable(),
  /** The hardware key trust the request recorded, by the join's own rule (two identifiers, one a serial or product UUID). */
  hardwareKeyTrusted: z.boolean(),
});
export type NodeAdmission = z.infer<typeof nodeAdmission>;

export const nodePageFields = {
  /** The hostname the machine claimed at its last join, if any. */
  hostname: z.string().nullable(),
  poolName: z.string().nullable(),
  siteName: z.string().nullable(),
  /**
   * The role the node's certificate carries (its current one, else its newest): `ramdisk` for a node the
   * discovery attestor admitted, whose row keeps the token's role `discovery`.
   */
  certificateRole: z.string().nullable(),
  admission: nodeAdmission.nullable(),
};

import { z } from 'zod';
import { labelsSchema } from './labels';
import { idOf } from './resource-names';
import { requestFilterFields } from './join-request-filter';

const JOIN_REQUEST_STATES = ['pending', 'approved', 'rejected', 'expired', 'consumed'] as const;
export type JoinRequestState = (typeof JOIN_REQUEST_STATES)[number];

/** Approval lifetime bounds (joining.md): 60 to 86,400 seconds, one hour by default. */
export const APPROVAL_TTL = { min: 60, max: 86_400, default: 3_600 } as const;
export const REQUEST_PAGE = { default: 100, max: 200 } as const;

const poolRef = { tenantId: idOf('tnt'), poolId: idOf('pool') };
const reason = z
  .string()
  .min(1)
  .max(500)
  .regex(/^[^\p{Cc}]*$/u, 'must be printable');

export const listJoinRequestsInput = z.strictObject({
  ...poolRef,
  /** `pending` by default; `all` lists every state. */
  state: z.enum([...JOIN_REQUEST_STATES, 'all']).default('pending'),
  limit: z.number().int().min(1).max(REQUEST_PAGE.max).optional(),
  cursor: idOf('jreq').optional(),
  direction: z.enum(['forward', 'backward']).optional(),
  ...requestFilterFields,
});
export const getJoinRequestInput = z.strictObject({ ...poolRef, requestId: idOf('jreq') });
export const approveJoinRequestInput = z.strictObject({
  ...poolRef,
  requestId: idOf('jreq'),
  ttlSeconds: z
    .number()
    .int()
    .min(APPROVAL_TTL.min, 'must be at least 60 seconds')
    .max(APPROVAL_TTL.max, 'must be at most 86400 seconds')
    .default(APPROVAL_TTL.default),
  reason: reason.optional(),
  /** Labels the node gets at admission, over its token's; a second approval's merge over the first's. */
  labels: labelsSchema.optional(),
});
/** A rejection is final, so it carries a reason: required, and not only spaces. */
const rejectionReason = z
  .string({ error: 'a rejection is final: say why (a reason is required)' })
  .trim()
  .min(1, 'a rejection is final: say why (a reason is required)')
  .max(500)
  .regex(/^[^\p{Cc}]*$/u, 'must be printable');
export const rejectJoinRequestInput = z.strictObject({ ...poolRef, requestId: idOf('jreq'), reason: rejectionReason });

/**
 * The pending requests a bulk decision takes: the pool's view narrowed by the queue's filter, and only those
 * that asked at or before `createdUpTo` (the `asOf` of the listing whose count the operator confirmed), so a
 * machine that arrives during the decision is never decided unseen.
 */
export const requestMatching = z.strictObject({ ...requestFilterFields, createdUpTo: z.iso.datetime({ offset: true }) });
const selection = {
  requestIds: z.array(idOf('jreq')).min(1).max(REQUEST_PAGE.max).optional(),
  matching: requestMatching.optional(),
};
const oneSelection = (value: { requestIds?: unknown; matching?: unknown }) =>
  (value.requestIds === undefined) !== (value.matching === undefined);
const selectionMessage = { message: 'name requestIds, or matching (a filter), not both', path: ['requestIds'] };
/**
 * Approves a page of requests in one statement: the ids named, or the next page of 200 that match a filter
 * (`approve --all-pending`, the console's "select all matching"); the answer says how many still match.
 */
export const approveJoinRequestsInput = approveJoinRequestInput
  .omit({ requestId: true })
  .extend(selection)
  .refine(oneSelection, selectionMessage);
/** Rejects a page of requests in one statement, like approveMany. */
export const rejectJoinRequestsInput = rejectJoinRequestInput
  .omit({ requestId: true })
  .extend(selection)
  .refine(oneSelection, selectionMessage);

/** What a tpm enrollment shows an operator: the EK hash, the EK certificate's issuer (or "no EK certificate"), the AK. */
export const tpmRequestFactsSchema = z
  .object({
    ekHash: z.string(),
    ekIssuer: z.string(),
    /** Why a present EK certificate did not chain to a configured vendor root; null otherwise. */
    ekChainProblem: z.string().nullable(),
    akStatement: z.string(),
  })
  .strict();

/** A request as every answer shows it: what the attestor saw and the decision. Strict: nothing else leaks. */
export const joinRequestRecord = z
  .object({
    id: z.string(),
    state: z.enum(JOIN_REQUEST_STATES),
    attestor: z.string(),
    claims: z.record(z.string(), z.unknown()),
    hardwareKey: z.string().nullable(),
    /** At least two independent identifiers made the key (joining.md "Placeholder hardware"). */
    hardwareKeyTrusted: z.boolean(),
    mac: z.string().nullable(),
    ip: z.string().nullable(),
    workflowId: z.string().nullable(),
    vouchedBy: z.string().nullable(),
    bootLeaseEpoch: z.number().nullable(),
    csrSha256: z.string(),
    siteId: z.string(),
    createdAt: z.string(),
    expiresAt: z.string(),
    decidedAt: z.string().nullable(),
    decidedBy: z.string().nullable(),
    /** Who decided, as the console shows them: the operator's name (else email), `rule <name>`, `import <id>`; else null. */
    decidedByName: z.string().nullable(),
    reason: z.string().nullable(),
    poolId: z.string().nullable(),
    consumedAt: z.string().nullable(),
    /** The node the consumed approval admitted (null before, and for requests consumed before this was kept). */
    nodeId: z.string().nullable(),
    /** The address the join came from (for a relayed join, the gateway's caller); null on older rows. */
    clientAddress: z.string().nullable(),
    /** A `tpm` enrollment's EK and AK; null for every other attestor. */
    tpm: tpmRequestFactsSchema.nullable(),
    /**
     * A `tpm` request's EK certificate chains to a configured vendor root (true); false when the EK has no
     * certificate or one that does not chain (anyone can make such a TPM in software); null for every other attestor.
     */
    ekCertified: z.boolean().nullable(),
    /** The site's setting: 2 when the request needs approvals by two different people (a key acts as its creator). */
    requiredApprovals: z.union([z.literal(1), z.literal(2)]),
    /**
     * The first of two approvals (who, as the console names them, when, into which pool); null when none was
     * recorded. A pending request with one is "1 of 2"; an approved one keeps it beside `decidedBy`, the second.
     */
    firstApproval: z
      .object({ by: z.string(), byName: z.string().nullable(), at: z.string(), poolId: z.string().nullable() })
      .strict()
      .nullable(),
    /**
     * How many approvals the request has so far: 0 or 1 while pending (1 of `requiredApprovals` on a two-person
     * site: recorded, not yet effective), `requiredApprovals` once approved.
     */
    approvals: z.number().int().min(0).max(2),
  })
  .strict();
export type JoinRequestRecord = z.infer<typeof joinRequestRecord>;

export const joinRequestPage = z
  .object({
    items: z.array(joinRequestRecord),
    nextCursor: z.string().nullable(),
    /** How many requests match the state and filter, on every page. */
    total: z.number().int(),
    /** The database's time of the listing: a bulk decision's `createdUpTo`. */
    asOf: z.string(),
    /**
     * Of the `total` requests that match, how many are `tpm` enrollments whose EK is not vendor-certified: what
     * a bulk approval of every match names in its confirmation.
     */
    notVendorCertified: z.number().int().optional(),
  })
  .strict();
export type JoinRequestPage = z.infer<typeof joinRequestPage>;

/** `remaining`: with `matching`, how many pending requests still match after this page (0: done). */
/**
 * `recorded`: requests of a two-person site whose first approval this call recorded (or had already recorded
 * for the same caller): they stay pending, 1 of 2, until another principal approves them.
 */
export const approvedJoinRequests = z
  .object({
    approved: z.array(joinRequestRecord),
    recorded: z.array(joinRequestRecord),
    skipped: z.array(z.string()),
    remaining: z.number().int(),
  })
  .strict();
export type ApprovedJoinRequests = z.infer<typeof approvedJoinRequests>;
export const rejectedJoinRequests = z
  .object({ rejected: z.array(joinRequestRecord), skipped: z.array(z.string()), remaining: z.number().int() })
  .strict();
export type RejectedJoinRequests = z.infer<typeof rejectedJoinRequests>;

/** One event of `joinRequests.onChange`: the requests of the pool's queue that changed (re-read them with `get`). */
export const joinRequestChange = z.object({ siteId: z.string(), requestIds: z.array(z.string()) });
export type JoinRequestChange = z.infer<typeof joinRequestChange>;

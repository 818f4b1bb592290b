import { z } from 'zod';
import { idOf, pageDirection } from './resource-names';
import { nodeFilterFields } from './node-filter';
import { labelsSchema } from './labels';
import { nodePageFields } from './node-page-schemas';

/**
 * A node's session as the console and the APIs show it. `connected` is read from the leases, never from a flag
 * a dead gateway left behind: the node has a session whose gateway's lease is live. While connected, `since`
 * is when its sessions began (a quick reconnect keeps it) and `lastHeartbeat` is its gateway's last lease
 * renewal (the gateway writes heartbeats on the same clock); while disconnected, both are when its last
 * session ended (null: it never had one).
 */
const nodeSessionState = z.object({
  connected: z.boolean(),
  since: z.string().nullable(),
  lastHeartbeat: z.string().nullable(),
  /** The gateway process that holds its session (a random id per gateway start). */
  gatewayId: z.string().nullable(),
});
export type NodeSessionState = z.infer<typeof nodeSessionState>;

export const NODE_STATES = ['adopting', 'adopted', 'retired'] as const;

export const listNodesInput = z.strictObject({
  tenantId: idOf('tnt'),
  ...nodeFilterFields,
  poolId: idOf('pool').optional(),
  siteId: idOf('site').optional(),
  state: z.enum(NODE_STATES).optional(),
  /** Opaque: the last node id of the previous page. */
  cursor: idOf('node').optional(),
  limit: z.number().int().min(1).max(500).default(100),
  /** Sent by tRPC's infinite queries (the console's list); pages only go forward. */
  direction: pageDirection,
});

/** The node list's filter without its paging: what a CSV export of the list takes (query parameters in REST). */
export const exportNodesInput = listNodesInput.omit({ cursor: true, limit: true, direction: true });

export const nodeRefInput = z.strictObject({ tenantId: idOf('tnt'), nodeId: idOf('node') });

const nodeSummary = z.object({
  id: z.string(),
  tenantId: z.string(),
  siteId: z.string(),
  poolId: z.string().nullable(),
  role: z.string(),
  state: z.string(),
  trust: z.string(),
  cordoned: z.boolean(),
  identityGeneration: z.number().int(),
  attestor: z.string(),
  /** Operator labels: set at admission, edited later; never on the certificate, never authorization. */
  labels: labelsSchema,
  createdAt: z.string(),
  updatedAt: z.string(),
});

/** One acceptance check's verdict in the last run. */
const acceptanceCheckResult = z.object({ check: z.string(), passed: z.boolean(), message: z.string() });

const nodeCondition = z.object({
  type: z.string(),
  status: z.boolean(),
  message: z.string(),
  /** AcceptanceFailed: each check of the node's latest run, passed or not. */
  checks: z.array(acceptanceCheckResult).optional(),
});

/** What a list row shows besides the summary: trust, the token it joined with, its current certificate. */
const nodeIdentity = z.object({
  hardwareKeyTrusted: z.boolean(),
  /** Whether the node row holds a hardware key at all (a ramdisk's never does; its installed OS joins with one). */
  hasHardwareKey: z.boolean(),
  /** The join token the node (last) joined with, when it joined with one. */
  joinTokenId: z.string().nullable(),
  /**
   * What its (last) join proved about the node key: `tpm` when the attestor proved the key lives in the machine's
   * TPM (a `tpm` join, or a re-join with its key attestation), `unattested` otherwise (every token join, even when
   * bcd keeps the key in a TPM); null for a join recorded without it.
   */
  nodeKey: z.enum(['tpm', 'unattested']).nullable(),
  /** What the machine claimed when it (last) joined: hostname, serials, product UUID, MACs, GPU UUIDs. */
  claims: z.record(z.string(), z.unknown()),
  /** The join request whose approval admitted the node, when one did. */
  joinRequestId: z.string().nullable(),
  /** Who decided the admitting request when no person did: `rule <name>` or `import <id>`. */
  joinRequestDecidedBy: z.string().nullable(),
  certificate: z
    .object({ serial: z.string(), notBefore: z.string(), notAfter: z.string(), identityGeneration: z.number().int() })
    .nullable(),
  /** Whether the node holds a session now, since when, its last heartbeat and its gateway. */
  session: nodeSessionState,
  /**
   * The trust set version the node's agent holds, as its last Hello reported it or a session sent it since, and
   * when that was recorded (null: no Hello reported one yet).
   */
  trustVersion: z.number().int().nullable(),
  trustVersionAt: z.string().nullable(),
});

/** How a certificate came to be: by a join, by a reclaim (a join that replaced the identity), or by a renewal. */
const CERTIFICATE_ISSUANCES = ['join', 'reclaim', 'renewal'] as const;

/** One row of a node's certificate history (never the DER or the key hash). */
const nodeCertificateRecord = z.object({
  serial: z.string(),
  notBefore: z.string(),
  notAfter: z.string(),
  identityGeneration: z.number().int(),
  /** The certificate `certificate` names: the node's live one of its current generation. */
  isCurrent: z.boolean(),
  revokedAt: z.string().nullable(),
  /** `revoked`, `deleted` or `reclaimed`, as the revocation recorded it. */
  revocationReason: z.string().nullable(),
  issuedBy: z.enum(CERTIFICATE_ISSUANCES),
});

/** How many certificates a node answer lists at most, newest first; `certificateCount` says how many exist. */
export const CERTIFICATE_HISTORY_LIMIT = 200;

export const nodeDetail = nodeSummary.extend({
  ...nodeIdentity.shape,
  ...nodePageFields,
  conditions: z.array(nodeCondition),
  /** Every certificate of the node, newest first (at most {@link CERTIFICATE_HISTORY_LIMIT}). */
  certificates: z.array(nodeCertificateRecord),
  certificateCount: z.number().int(),
});

const nodeListItem = nodeSummary.extend(nodeIdentity.shape);
export const nodeList = z.object({
  items: z.array(nodeListItem),
  nextCursor: z.string().nullable(),
  /** How many nodes the filter selects in all (every page), counted exactly when the page was read. */
  total: z.number().int(),
});
export const revokeResult = nodeDetail.extend({ revokedSerials: z.array(z.string()) });

export type NodeSummary = z.infer<typeof nodeSummary>;
export type NodeDetail = z.infer<typeof nodeDetail>;
export type NodeListItem = z.infer<typeof nodeListItem>;
export type NodeCertificateRecord = z.infer<typeof nodeCertificateRecord>;

import { timingSafeEqual } from 'node:crypto';
import type { HardwareClaims } from '../../protocol/hardware-claims';
import type { HardwareKey } from './hardware/hardware-key';
import type { JoinExpect } from '../../protocol/api/join-expect';
import type { DiscoveryBootInfo } from './boot-info';
import { isPermanentGlobalMac, normalizeMac } from '../../protocol/hardware-claims';

/** A token row as the admission transaction reads it (locked), with its pool and site. */
export interface LockedToken {
  id: string;
  tenantId: string;
  poolId: string | null;
  siteId: string;
  role: string;
  secretHash: Buffer;
  usesLeft: number;
  expect: JoinExpect | null;
  allowReclaim: boolean;
  hosted: string | null;
  /** A discovery token's one MAC. */
  boundMac: string | null;
  /** What a discovery token's boot step saw (ip, workflowId, vouchedBy, bootLeaseEpoch). */
  discovery: DiscoveryBootInfo | null;
  /** A `provisioned` token's one node. */
  nodeId: string | null;
  isRevoked: boolean;
  isExpired: boolean;
  /** Labels the token gives the nodes it admits (the lowest of a join's sources: mergeLabels). */
  labels: Record<string, string>;
  pool: LockedPool | null;
  /** `discovery`: the site's stored discovery settings (see discoverySettings). */
  site: { kind: string; ownerTenantId: string; discovery: unknown };
}

/** The pool a token, rule, expected machine, request or node names, as the decisions check it. */
export interface LockedPool {
  agent: string;
  ownerTenantId: string;
  siteId: string;
  isArchived: boolean;
  joinAttestors: string[] | null;
  platformOperated: boolean;
  hasAcceptanceChecks: boolean;
}

/** The node a trusted hardware key already belongs to. */
export interface ExistingNode {
  id: string;
  tenantId: string;
  siteId: string;
  poolId: string | null;
  role: string;
  identityGeneration: number;
  /** The node's labels, when the attestor read them: a reclaim keeps them and merges the admission's over them. */
  labels?: Record<string, string>;
}

/** The node a `provisioned` token names, read and locked by the admission (see BoundNode in AttestorInput). */
export interface BoundNode extends ExistingNode {
  state: string;
}

interface JoinCandidate {
  /** The bearer token's SHA-256 secret hash, compared in constant time with the token row's. */
  token: { secretHash: Buffer } | null;
  role: string;
  claims: HardwareClaims;
  hardware: HardwareKey;
  /** The key when it can name a machine (see PreparedJoin.trustedKey). */
  trustedKey: Buffer | null;
}

export type NodeTrust = 'platform' | 'tenant-owned' | 'tenant-controlled';

export interface Admission {
  admitted: true;
  reclaim: ExistingNode | null;
  tenantId: string;
  siteId: string;
  poolId: string | null;
  /**
   * A provisioned token's reclaim (the token names the node): the node also moves into the token's pool and
   * takes the joining machine's trusted hardware key. Other reclaims keep both.
   */
  rebind?: true;
  /** The token's role, kept on the node. */
  role: string;
  /** The role the certificate names: `node-tenant` for a tenant-controlled node. */
  certRole: string;
  /** Whether the node's hardware key is trusted (it can reclaim later). */
  hardwareKeyTrusted: boolean;
  trust: NodeTrust;
  /** Adopted at once unless the pool runs acceptance checks. */
  state: 'adopted' | 'adopting';
  /**
   * A discovery join admitted without a request because its token's bound MAC belongs to a node of the
   * site: published as `node.join-request.auto-admitted` naming that node, so operators see every admission
   * that no one decided.
   */
  autoAdmitted?: { matchedNodeId: string; mac: string };
  /** Who the audit row names as the actor (`join-token:<tokenId>` for a token join). */
  actor: string;
  /** `urn:bc:` statements the certificate carries after its SPIFFE ID (kept from an earlier certificate). */
  statements?: string[];
  /** `tpm` when the attestor proved the node key lives in the machine's TPM; else `unattested` (joining.md). */
  nodeKey?: 'tpm';
  /**
   * Labels the admission gives the node, merged from its sources (token < approval rule < expected machine <
   * approval); a reclaim merges them over the node's own. Never on the certificate, never authorization.
   */
  labels?: Record<string, string>;
  /**
   * The command kinds the certificate allows (protocol.md "Commands"), written on its `node_certs` row and kept
   * by renewals: absent or null, no restriction; an empty list, none.
   */
  allowedKinds?: string[] | null;
}

export interface Refusal {
  admitted: false;
  reason: string;
  /** The token's tenant once its secret verified; null routes the event to the root tenant. */
  tenantId: string | null;
  /** For `join:expect`: which binding the machine did not satisfy (`serial`, `mac`, … or the bound MAC). */
  expectField?: string;
}

export const refuse = (reason: string, tenantId: string | null = null, expectField?: string): Refusal =>
  expectField ? { admitted: false, reason, tenantId, expectField } : { admitted: false, reason, tenantId };

/**
 * Who vouches for the node: `platform` when the platform owns the pool (its owner owns the site, the
 * site is not custom, and the owner is the root tenant), else `tenant-owned`. A hosted (Kubernetes) token
 * lowers `platform` to `tenant-controlled` unless the pool is platform-operated; the token decides, never
 * the machine's claims, and it never raises trust.
 */
export function nodeTrust(token: LockedToken, rootTenantId: string | null): NodeTrust {
  const pool = token.pool;
  const platformOwns =
    !!pool &&
    pool.ownerTenantId === token.site.ownerTenantId &&
    token.site.kind !== 'custom' &&
    (rootTenantId === null || pool.ownerTenantId === rootTenantId);
  if (!platformOwns) return 'tenant-owned';
  if (token.hosted === 'kubernetes' && !pool!.platformOperated) return 'tenant-controlled';
  return 'platform';
}

/**
 * The token rules every token-carrying attestor applies first, in joining.md's order: the secret (in
 * constant time), revocation, expiry at the database's clock, the remaining uses and the role. Reasons are
 * named `<attestor>:<reason>`; null when the token admits.
 */
export function checkToken(attestor: string, candidate: JoinCandidate, token: LockedToken | undefined): Refusal | null {
  const secretHash = candidate.token?.secretHash;
  if (!token || !secretHash) return refuse(`${attestor}:unknown`);
  if (token.secretHash.length !== secretHash.length || !timingSafeEqual(token.secretHash, secretHash)) {
    return refuse(`${attestor}:secret-mismatch`);
  }
  const tenant = token.tenantId;
  if (token.isRevoked) return refuse(`${attestor}:revoked`, tenant);
  if (token.isExpired) return refuse(`${attestor}:expired`, tenant);
  if (token.usesLeft <= 0) return refuse(`${attestor}:exhausted`, tenant);
  if (candidate.role !== token.role) return refuse(`${attestor}:role-mismatch`, tenant);
  return null;
}

/** A discovery token's MAC must be one of the machine's permanent MACs. */
export function hasBoundMac(token: LockedToken, candidate: JoinCandidate): boolean {
  return !token.boundMac || (candidate.claims.macs ?? []).some((m) => isPermanentGlobalMac(m) && normalizeMac(m) === token.boundMac);
}

/** The pool rules: live, runs the daemon, the token's tenant and site, and the pool's attestor policy. */
export function checkPool(attestor: string, token: LockedToken, pool: LockedToken['pool'], poolId: string | null): Refusal | null {
  if (poolId === null) return null;
  const tenant = token.tenantId;
  if (!pool || pool.agent !== 'bcd' || pool.isArchived) return refuse('join:pool', tenant);
  if (pool.ownerTenantId !== token.tenantId) return refuse('join:tenant', tenant);
  if (pool.siteId !== token.siteId) return refuse('join:site', tenant);
  if (pool.joinAttestors && !pool.joinAttestors.includes(attestor)) return refuse('join:pool-attestor', tenant);
  return null;
}

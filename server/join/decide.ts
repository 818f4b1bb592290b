import { timingSafeEqual } from 'node:crypto';
import type { HardwareClaims } from './hardware/claims';
import type { HardwareKey } from './hardware/hardware-key';
import { matchesExpect, type JoinExpect } from './hardware/expect';
import { isPermanentGlobalMac, normalizeMac } from './hardware/claims';

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
  isRevoked: boolean;
  isExpired: boolean;
  pool: {
    agent: string;
    ownerTenantId: string;
    siteId: string;
    isArchived: boolean;
    joinAttestors: string[] | null;
    platformOperated: boolean;
    hasAcceptanceChecks: boolean;
  } | null;
  site: { kind: string; ownerTenantId: string };
}

/** The node a trusted hardware key already belongs to. */
export interface ExistingNode {
  id: string;
  tenantId: string;
  siteId: string;
  poolId: string | null;
  role: string;
  identityGeneration: number;
}

export interface JoinCandidate {
  /** SHA-256 of the bearer token's secret, compared in constant time with the token row's. */
  secretHash: Buffer;
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
  /** The token's role, kept on the node. */
  role: string;
  /** The role the certificate names: `node-tenant` for a tenant-controlled node. */
  certRole: string;
  /** Whether the node's hardware key is trusted (it can reclaim later). */
  hardwareKeyTrusted: boolean;
  trust: NodeTrust;
  /** Adopted at once unless the pool runs acceptance checks. */
  state: 'adopted' | 'adopting';
}

export interface Refusal {
  admitted: false;
  reason: string;
  /** The token's tenant once its secret verified; null routes the event to the root tenant. */
  tenantId: string | null;
}

const refuse = (reason: string, tenantId: string | null = null): Refusal => ({ admitted: false, reason, tenantId });

/** What each token role's agent is certified as: a provisioned OS joins as a node, a PXE ramdisk as `ramdisk`. */
export const CERT_ROLE_OF_TOKEN: Record<string, string> = { node: 'node', site: 'site', provisioned: 'node', discovery: 'ramdisk' };

/**
 * Who vouches for the node: `platform` when the platform owns the pool (its owner owns the site, the
 * site is not custom, and the owner is the root tenant), else `tenant-owned`. A hosted (Kubernetes) token
 * lowers `platform` to `tenant-controlled` unless the pool is platform-operated; the token decides, never
 * the machine's claims, and it never raises trust.
 */
export function nodeTrust(token: LockedToken, rootTenantId: string | null): NodeTrust {
  const pool = token.pool;
  const platformOwns =
    !!pool && pool.ownerTenantId === token.site.ownerTenantId && token.site.kind !== 'custom' && (rootTenantId === null || pool.ownerTenantId === rootTenantId);
  if (!platformOwns) return 'tenant-owned';
  if (token.hosted === 'kubernetes' && !pool!.platformOperated) return 'tenant-controlled';
  return 'platform';
}

/**
 * The `join-token` attestor and JoinService's rules for one join, in joining.md's order: the token (secret
 * in constant time, revocation, expiry, uses, role), then `expect`, the placeholder rule, the reclaim rules,
 * the pool, and the pool's attestor policy. Pure: the caller holds the token row's lock and applies the
 * decision (consuming one use) only when it admits.
 */
export function decideJoin(
  candidate: JoinCandidate,
  token: LockedToken | undefined,
  existing: ExistingNode | undefined,
  rootTenantId: string | null,
): Admission | Refusal {
  if (!token) return refuse('join-token:unknown');
  const { secretHash } = candidate;
  if (token.secretHash.length !== secretHash.length || !timingSafeEqual(token.secretHash, secretHash)) {
    return refuse('join-token:secret-mismatch');
  }
  const tenant = token.tenantId;
  if (token.isRevoked) return refuse('join-token:revoked', tenant);
  if (token.isExpired) return refuse('join-token:expired', tenant);
  if (token.usesLeft <= 0) return refuse('join-token:exhausted', tenant);
  if (candidate.role !== token.role) return refuse('join-token:role-mismatch', tenant);

  if (token.expect && !matchesExpect(token.expect, candidate.claims)) return refuse('join:expect', tenant);
  if (token.boundMac && !(candidate.claims.macs ?? []).some((m) => isPermanentGlobalMac(m) && normalizeMac(m) === token.boundMac)) {
    return refuse('join:expect', tenant);
  }
  const { hardware } = candidate;
  if ((!hardware.key || !hardware.trusted || !hardware.hasUuidOrSerial) && !token.expect) {
    return refuse('join:placeholder-hardware', tenant);
  }
  // Only a trusted key can name a known machine: fewer than two identifiers never reclaims.
  const reclaim = candidate.trustedKey ? existing ?? null : null;
  if (
    reclaim &&
    (!token.allowReclaim ||
      reclaim.tenantId !== token.tenantId ||
      reclaim.siteId !== token.siteId ||
      reclaim.poolId !== token.poolId ||
      reclaim.role !== token.role)
  ) {
    return refuse('join:reclaim', tenant);
  }

  const pool = token.pool;
  if (token.poolId !== null) {
    if (!pool || pool.agent !== 'bcd' || pool.isArchived) return refuse('join:pool', tenant);
    if (pool.ownerTenantId !== token.tenantId) return refuse('join:tenant', tenant);
    if (pool.siteId !== token.siteId) return refuse('join:site', tenant);
    if (pool.joinAttestors && !pool.joinAttestors.includes('join-token')) return refuse('join:pool-attestor', tenant);
  }

  const trust = nodeTrust(token, rootTenantId);
  return {
    admitted: true,
    reclaim,
    tenantId: token.tenantId,
    siteId: token.siteId,
    poolId: token.poolId,
    role: token.role,
    certRole: trust === 'tenant-controlled' ? 'node-tenant' : CERT_ROLE_OF_TOKEN[token.role] ?? token.role,
    hardwareKeyTrusted: candidate.trustedKey !== null,
    trust,
    state: pool?.hasAcceptanceChecks ? 'adopting' : 'adopted',
  };
}

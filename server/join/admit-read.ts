import type { AdmissionReadRow, LockedTokenJson } from './admit-sql';
import type { BoundNode, ExistingNode, LockedToken } from './decide';
import { existingNode, lockedPool } from './locked-rows';

// What the admission's locking read (READ_ADMISSION_SQL) answered, as the batch's decisions read it.

export interface LockedRows {
  /** The database's now: the certificates' notBefore and the seals' freshness are measured from it. */
  now: Date;
  tokens: Map<string, LockedToken>;
  /** The nodes the batch's trusted hardware keys (hex) name. */
  existing: Map<string, ExistingNode>;
  /** Every node read, by id: the ones `provisioned` tokens name among them. */
  bound: Map<string, BoundNode>;
  /** The CSR keys (SPKI SHA-256, hex) certified before. */
  certified: Set<string>;
}

function toLockedToken(r: LockedTokenJson): LockedToken {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    poolId: r.pool_id,
    siteId: r.site_id,
    role: r.role,
    secretHash: Buffer.from(r.secret_hash, 'hex'),
    usesLeft: r.uses_left,
    expect: r.expect,
    allowReclaim: r.allow_reclaim,
    hosted: r.hosted,
    boundMac: r.bound_mac,
    discovery: r.discovery ?? null,
    nodeId: r.node_id ?? null,
    labels: r.labels ?? {},
    isRevoked: r.is_revoked,
    isExpired: r.is_expired,
    // The read selects the pool's agent and policy without the p_ prefix.
    pool: r.p_id ? lockedPool({ ...r, p_agent: r.agent, p_policy: r.policy }, r.policy?.kubernetes?.platformOperated === true) : null,
    site: { kind: r.s_kind, ownerTenantId: r.s_owner, discovery: r.s_discovery },
  };
}

export function lockedRows(row: AdmissionReadRow): LockedRows {
  const existing = new Map<string, ExistingNode>();
  const bound = new Map<string, BoundNode>();
  for (const r of row.nodes) {
    const node = existingNode(r);
    if (r.by_key) existing.set(r.hardware_key!, node);
    bound.set(r.id, { ...node, state: r.state });
  }
  return {
    now: row.now,
    tokens: new Map(row.tokens.map((r) => [r.id, toLockedToken(r)])),
    existing,
    bound,
    certified: new Set(row.certified),
  };
}

import type { PoolColumns } from '../requests/request-store-sql';
import type { ExistingNode, LockedPool } from './decide';

// The rows the join's reads answer (snake_case columns, a joined pool's as p_*), as the decisions read them.

/** A row's joined pool; the caller has checked that the row names one. */
export function lockedPool(r: PoolColumns, platformOperated = false): LockedPool {
  const policy = r.p_policy ?? {};
  return {
    agent: r.p_agent,
    ownerTenantId: r.p_owner,
    siteId: r.p_site,
    isArchived: r.p_archived,
    joinAttestors: policy.joinAttestors ?? null,
    platformOperated,
    hasAcceptanceChecks: r.p_checks,
  };
}

/** The columns of a `nodes` row that a batch reads for a node it may reclaim. */
interface NodeColumns {
  id: string;
  tenant_id: string;
  site_id: string;
  pool_id: string | null;
  role: string;
  identity_generation: number;
  labels: Record<string, string> | null;
}

export function existingNode(r: NodeColumns): ExistingNode {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    siteId: r.site_id,
    poolId: r.pool_id,
    role: r.role,
    identityGeneration: r.identity_generation,
    labels: r.labels ?? {},
  };
}

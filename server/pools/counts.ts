import { z } from 'zod';
import type { Db } from '../db/client';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { idOf } from '../../protocol/api/resource-names';
import { LIVE_CONDITION } from '../tokens/records';

export const poolCountsInput = z.strictObject({ tenantId: idOf('tnt') });

const poolCounts = z.object({
  poolId: z.string(),
  /** Nodes by state (`adopting`, `ready`, …); states with no node are left out. */
  nodesByState: z.record(z.string(), z.number().int()),
  liveTokens: z.number().int(),
  /** Nodes with a live session (their gateway's lease is live). */
  connectedNodes: z.number().int(),
  /** Join requests waiting for a decision that this pool's operators see (its own and its site's unclaimed ones). */
  pendingRequests: z.number().int(),
});
export const poolCountsPage = z.object({ items: z.array(poolCounts) });
export type PoolCounts = z.infer<typeof poolCounts>;

/**
 * The live counts of each of a tenant's pools: its nodes by state, its connected nodes and its live join tokens (the same
 * condition the token list uses). Pools with neither are left out; the console shows them as zero.
 * Pending join requests count in every live bcd pool of their site: any of them may approve one.
 */
export async function countPools(db: Db, principal: Principal, input: z.infer<typeof poolCountsInput>): Promise<{ items: PoolCounts[] }> {
  await authorize(db, principal, 'compute:pools:read', resource.tenant(input.tenantId));
  const [nodes, tokens, requests, connected] = await Promise.all([
    db.$queryRaw<{ pool_id: string; state: string; n: number }[]>`
      SELECT pool_id, state, count(*)::int AS n FROM nodes
       WHERE tenant_id = ${input.tenantId} AND pool_id IS NOT NULL
       GROUP BY pool_id, state`,
    db.$queryRaw<{ pool_id: string; n: number }[]>`
      SELECT pool_id, count(*)::int AS n FROM join_tokens
       WHERE tenant_id = ${input.tenantId} AND pool_id IS NOT NULL AND ${LIVE_CONDITION}
       GROUP BY pool_id`,
    // The queue's visibility (requests/records.ts visibleTo) and `pending` filter, per pool.
    db.$queryRaw<{ pool_id: string; n: number }[]>`
      SELECT p.id AS pool_id, count(*)::int AS n FROM pools p
        JOIN join_requests r ON r.tenant_id = p.owner_tenant_id AND (r.pool_id = p.id OR (r.pool_id IS NULL AND r.site_id = p.site_id))
       WHERE p.owner_tenant_id = ${input.tenantId} AND p.agent = 'bcd' AND p.archived_at IS NULL
         AND r.state = 'pending' AND r.expires_at > compute_now()
       GROUP BY p.id`,
    db.$queryRaw<{ pool_id: string; n: number }[]>`
      SELECT n.pool_id, count(DISTINCT n.id)::int AS n FROM nodes n
        JOIN node_sessions s ON s.node_id = n.id JOIN gateway_leases g ON g.gateway_id = s.gateway_id
       WHERE n.tenant_id = ${input.tenantId} AND n.pool_id IS NOT NULL AND g.expires_at > compute_now()
       GROUP BY n.pool_id`,
  ]);
  const byPool = new Map<string, PoolCounts>();
  const entry = (poolId: string) =>
    byPool.get(poolId) ??
    byPool.set(poolId, { poolId, nodesByState: {}, liveTokens: 0, connectedNodes: 0, pendingRequests: 0 }).get(poolId)!;
  for (const row of nodes) entry(row.pool_id).nodesByState[row.state] = row.n;
  for (const row of tokens) entry(row.pool_id).liveTokens = row.n;
  for (const row of requests) entry(row.pool_id).pendingRequests = row.n;
  for (const row of connected) entry(row.pool_id).connectedNodes = row.n;
  return { items: [...byPool.values()] };
}

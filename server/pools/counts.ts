import { z } from 'zod';
import { sql, type ExpressionBuilder } from 'kysely';
import type { Db } from '../db/client';
import { typed } from '../db/typed';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { idOf } from '../../protocol/api/resource-names';
import { liveToken } from '../tokens/records';

/** `count(*)::int AS n`: the number of the group's rows. */
const count = <D, TB extends keyof D>(eb: ExpressionBuilder<D, TB>) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n');

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
  const q = typed(db);
  const [nodes, tokens, requests, connected] = await Promise.all([
    q
      .selectFrom('nodes')
      .select((eb) => ['pool_id', 'state', count(eb)])
      .where('tenant_id', '=', input.tenantId)
      .where('pool_id', 'is not', null)
      .groupBy(['pool_id', 'state'])
      .$narrowType<{ pool_id: string }>()
      .execute(),
    q
      .selectFrom('join_tokens')
      .select((eb) => ['pool_id', count(eb)])
      .where('tenant_id', '=', input.tenantId)
      .where('pool_id', 'is not', null)
      .where(liveToken)
      .groupBy('pool_id')
      .$narrowType<{ pool_id: string }>()
      .execute(),
    // The queue's visibility (requests/records.ts visibleTo) and `pending` filter, per pool.
    q
      .selectFrom('pools as p')
      .innerJoin('join_requests as r', (join) =>
        join
          .onRef('r.tenant_id', '=', 'p.owner_tenant_id')
          .on((eb) =>
            eb.or([eb('r.pool_id', '=', eb.ref('p.id')), eb.and([eb('r.pool_id', 'is', null), eb('r.site_id', '=', eb.ref('p.site_id'))])]),
          ),
      )
      .select((eb) => ['p.id as pool_id', count(eb)])
      .where('p.owner_tenant_id', '=', input.tenantId)
      .where('p.agent', '=', 'bcd')
      .where('p.archived_at', 'is', null)
      .where('r.state', '=', 'pending')
      .where('r.expires_at', '>', sql<Date>`compute_now()`)
      .groupBy('p.id')
      .execute(),
    q
      .selectFrom('nodes as n')
      .innerJoin('node_sessions as s', 's.node_id', 'n.id')
      .innerJoin('gateway_leases as g', 'g.gateway_id', 's.gateway_id')
      .select((eb) => ['n.pool_id', eb.cast<number>(eb.fn.count('n.id').distinct(), 'integer').as('n')])
      .where('n.tenant_id', '=', input.tenantId)
      .where('n.pool_id', 'is not', null)
      .where('g.expires_at', '>', sql<Date>`compute_now()`)
      .groupBy('n.pool_id')
      .$narrowType<{ pool_id: string }>()
      .execute(),
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

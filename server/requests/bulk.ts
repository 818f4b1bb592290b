import type { z } from 'zod';
import type { Db } from '../db/client';
import { Prisma } from '../db/generated/client';
import { filterCondition } from './filter';
import { NOW_ONCE } from './records';
import type { requestMatching } from '../../protocol/api/join-request-schemas';
import { REQUEST_PAGE } from '../../protocol/api/join-request-schemas';

type Matching = z.output<typeof requestMatching>;
type PoolView = { id: string; siteId: string; ownerTenantId: string };

/**
 * The live pending requests that a bulk decision by filter takes, beside the pool's view: those matching the
 * filter that asked at or before `createdUpTo`, narrowed by `guard` (for approvals, the rules a retry must
 * pass, so a request whose retry would be refused is left pending rather than chosen again on every page).
 */
function matchingCondition(pool: PoolView, matching: Matching, guard: Prisma.Sql): Prisma.Sql {
  const { createdUpTo, ...filter } = matching;
  return Prisma.sql`tenant_id = ${pool.ownerTenantId} AND state = 'pending' AND expires_at > ${NOW_ONCE}
    AND created_at <= ${new Date(createdUpTo)}::timestamptz ${filterCondition(filter)} AND ${guard}`;
}

/**
 * The next page (oldest first, at most 200) of the requests a bulk decision by filter takes. Like the list,
 * each half of the pool's view (its own requests; its site's that no pool claimed) is read in index order and
 * limited before the two are merged, so choosing a page does not sort the whole queue.
 */
export async function selectMatchingPage(db: Db, pool: PoolView, matching: Matching, guard: Prisma.Sql): Promise<string[]> {
  const where = matchingCondition(pool, matching, guard);
  const tail = Prisma.sql`ORDER BY created_at, id LIMIT ${REQUEST_PAGE.max}`;
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM (
      (SELECT id, created_at FROM join_requests WHERE pool_id = ${pool.id} AND ${where} ${tail})
      UNION ALL
      (SELECT id, created_at FROM join_requests WHERE pool_id IS NULL AND site_id = ${pool.siteId} AND ${where} ${tail})
    ) AS page ${tail}`;
  return rows.map((r) => r.id);
}

/** How many requests a bulk decision by filter would still take. */
export async function countMatching(db: Db, pool: PoolView, matching: Matching, guard: Prisma.Sql): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM join_requests
     WHERE (pool_id = ${pool.id} OR (pool_id IS NULL AND site_id = ${pool.siteId})) AND ${matchingCondition(pool, matching, guard)}`;
  return row?.n ?? 0;
}

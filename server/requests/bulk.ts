import type { z } from 'zod';
import type { Db } from '../db/client';
import { Prisma } from '../db/generated/client';
import { filterCondition } from './filter';
import type { requestMatching } from '../../protocol/api/join-request-schemas';
import { REQUEST_PAGE } from '../../protocol/api/join-request-schemas';

type Matching = z.output<typeof requestMatching>;

/**
 * The live pending requests of the pool's view that a bulk decision by filter takes: those matching the
 * filter that asked at or before `createdUpTo`, narrowed by `guard` (for approvals, the rules a retry must
 * pass, so a request whose retry would be refused is left pending rather than chosen again on every page).
 */
function matchingCondition(visible: Prisma.Sql, matching: Matching, guard: Prisma.Sql): Prisma.Sql {
  const { createdUpTo, ...filter } = matching;
  return Prisma.sql`${visible} AND state = 'pending' AND expires_at > compute_now()
    AND created_at <= ${new Date(createdUpTo)}::timestamptz ${filterCondition(filter)} AND ${guard}`;
}

/** The next page (oldest first, at most 200) of the requests a bulk decision by filter takes. */
export async function selectMatchingPage(db: Db, visible: Prisma.Sql, matching: Matching, guard: Prisma.Sql): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM join_requests WHERE ${matchingCondition(visible, matching, guard)}
     ORDER BY created_at, id LIMIT ${REQUEST_PAGE.max}`;
  return rows.map((r) => r.id);
}

/** How many requests a bulk decision by filter would still take. */
export async function countMatching(db: Db, visible: Prisma.Sql, matching: Matching, guard: Prisma.Sql): Promise<number> {
  const [row] = await db.$queryRaw<
    { n: number }[]
  >`SELECT count(*)::int AS n FROM join_requests WHERE ${matchingCondition(visible, matching, guard)}`;
  return row?.n ?? 0;
}

import type { z } from 'zod';
import type { Db } from '../db/client';
import { Prisma } from '../db/generated/client';
import { DomainError } from '../../protocol/errors';
import type { Principal } from '../authz/principal';
import { loadPool } from '../pools/pools';
import {
  EK_NOT_CERTIFIED,
  NOW_ONCE,
  RECORD_COLUMNS,
  selectJoinRequest,
  toJoinRequestRecord,
  visibleTo,
  type JoinRequestRow,
} from './records';
import { filterCondition, pickFilter, type RequestFilter } from './filter';
import {
  getJoinRequestInput,
  listJoinRequestsInput,
  REQUEST_PAGE,
  type JoinRequestPage,
  type JoinRequestRecord,
} from '../../protocol/api/join-request-schemas';

/** The stored rows a state filter selects, written so that `pending` (the default) is an index range. */
function stateCondition(state: string): Prisma.Sql {
  switch (state) {
    case 'pending':
    case 'approved':
      return Prisma.sql`state = ${state} AND expires_at > ${NOW_ONCE}`;
    case 'expired':
      return Prisma.sql`(state = 'expired' OR (state IN ('pending', 'approved') AND expires_at <= ${NOW_ONCE}))`;
    case 'all':
      return Prisma.sql`TRUE`;
    default:
      return Prisma.sql`state = ${state}`;
  }
}

/** One page of the pool's view: each half limited by its own index range before the two are merged. */
export function listStatement(
  pool: { id: string; siteId: string; ownerTenantId: string },
  state: string,
  after: Prisma.Sql,
  limit: number,
  filter: RequestFilter = {},
): Prisma.Sql {
  const where = Prisma.sql`tenant_id = ${pool.ownerTenantId} AND ${stateCondition(state)} ${filterCondition(filter)} ${after}`;
  const tail = Prisma.sql`ORDER BY created_at DESC, id DESC LIMIT ${limit}`;
  return Prisma.sql`
    SELECT * FROM (
      (SELECT ${RECORD_COLUMNS} FROM join_requests WHERE pool_id = ${pool.id} AND ${where} ${tail})
      UNION ALL
      (SELECT ${RECORD_COLUMNS} FROM join_requests WHERE pool_id IS NULL AND site_id = ${pool.siteId} AND ${where} ${tail})
    ) AS page ${tail}`;
}

/** How many requests of the pool's view match, and the database's time of the count. */
export function countStatement(
  pool: { id: string; siteId: string; ownerTenantId: string },
  state: string,
  filter: RequestFilter,
): Prisma.Sql {
  return Prisma.sql`
    SELECT count(*)::int AS total, (count(*) FILTER (WHERE ${EK_NOT_CERTIFIED}))::int AS not_vendor_certified,
           compute_now() AS as_of FROM join_requests
     WHERE ${visibleTo(pool)} AND ${stateCondition(state)} ${filterCondition(filter)}`;
}

/**
 * `joinRequests.list` (`compute:join-tokens:read` on the pool): the pool's requests and its site's requests
 * no pool claimed yet, newest first, `pending` by default (`all` for every state), in pages of `limit`
 * (1 to 200, default 100) with `nextCursor`. Each half is served by its own index and limited before the
 * two are merged, so a page costs the same at ten requests or ten thousand. The filter (search, attestor,
 * vouchedBy, trusted key, age) narrows both halves, and `total` counts every match, not just the page.
 */
export async function listJoinRequests(
  db: Db,
  principal: Principal,
  valid: z.infer<typeof listJoinRequestsInput>,
): Promise<JoinRequestPage> {
  const pool = await loadPool(db, principal, 'compute:join-tokens:read', valid);
  const limit = valid.limit ?? REQUEST_PAGE.default;
  let after = Prisma.empty;
  if (valid.cursor) {
    const anchor = await selectJoinRequest(db, valid.cursor, visibleTo(pool));
    if (!anchor)
      throw new DomainError('INVALID_ARGUMENT', 'cursor: not a request of this pool; pass the nextCursor of a previous page', {
        field: 'cursor',
      });
    after = Prisma.sql`AND (created_at, id) < (SELECT created_at, id FROM join_requests WHERE id = ${anchor.id})`;
  }
  const filter = pickFilter(valid);
  const [rows, [count]] = await Promise.all([
    db.$queryRaw<JoinRequestRow[]>(listStatement(pool, valid.state, after, limit + 1, filter)),
    db.$queryRaw<{ total: number; not_vendor_certified: number; as_of: Date }[]>(countStatement(pool, valid.state, filter)),
  ]);
  const items = rows.slice(0, limit).map(toJoinRequestRecord);
  return {
    items,
    nextCursor: rows.length > limit ? items[items.length - 1]!.id : null,
    total: count!.total,
    asOf: count!.as_of.toISOString(),
    notVendorCertified: count!.not_vendor_certified,
  };
}

/** `joinRequests.get`: one request the pool's operators can see; any other is NOT_FOUND. */
export async function getJoinRequest(db: Db, principal: Principal, valid: z.infer<typeof getJoinRequestInput>): Promise<JoinRequestRecord> {
  const pool = await loadPool(db, principal, 'compute:join-tokens:read', valid);
  const row = await selectJoinRequest(db, valid.requestId, visibleTo(pool));
  if (!row) throw new DomainError('NOT_FOUND', `Join request ${valid.requestId} not found`);
  return toJoinRequestRecord(row);
}

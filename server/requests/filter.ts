import { Prisma } from '../db/generated/client';
import type { RequestFilter } from '../../protocol/api/join-request-filter';
import { NOW_ONCE } from './records';
import { searchTextMatch } from '../db/search-text';

export { pickFilter, type RequestFilter } from '../../protocol/api/join-request-filter';

/**
 * The text a search reads, one line per request: the machine's identifiers, vendor and model, and nothing
 * secret (no CSR hash, no token id). MACs are also there as bare hex digits so `3cecef`, `3c:ec:ef` and
 * `3c-ec-ef` all match. A column PostgreSQL generates when the request is written (migration
 * 20261202140001): built per row and search from the claims, it cost about 170 ms at 10,000 requests.
 */
const SEARCHED = Prisma.sql`search_text`;

/** The SQL condition (ANDed, with a leading AND) a filter adds to a statement over `join_requests`. */
export function filterCondition(filter: RequestFilter): Prisma.Sql {
  const parts: Prisma.Sql[] = [];
  if (filter.search) {
    // A MAC typed with separators also matches the bare digits of the stored one.
    parts.push(searchTextMatch(SEARCHED, filter.search));
  }
  if (filter.attestor) parts.push(Prisma.sql`attestor = ${filter.attestor}`);
  if (filter.vouchedBy) parts.push(Prisma.sql`vouched_by = ${filter.vouchedBy}`);
  if (filter.trustedKey === true) parts.push(Prisma.sql`hardware_key_trusted IS TRUE`);
  if (filter.trustedKey === false) parts.push(Prisma.sql`hardware_key_trusted IS NOT TRUE`);
  if (filter.minAgeSeconds !== undefined)
    parts.push(Prisma.sql`created_at <= ${NOW_ONCE} - ${filter.minAgeSeconds}::int * interval '1 second'`);
  if (filter.maxAgeSeconds !== undefined)
    parts.push(Prisma.sql`created_at >= ${NOW_ONCE} - ${filter.maxAgeSeconds}::int * interval '1 second'`);
  return parts.length ? Prisma.sql`AND ${Prisma.join(parts, ' AND ')}` : Prisma.empty;
}

import { Prisma } from '../db/generated/client';
import type { Db, Tx } from '../db/client';
import { parseLabelArgument } from '../../protocol/api/labels';
import type { NodeFilter } from '../../protocol/api/node-filter';
import { likeEscape, searchTextMatch } from '../db/search-text';

/**
 * Text that may be (the start of) an IPv4 or IPv6 address: digits and dots with a dot, or hex digits with a
 * colon. A MAC typed with colons reads as one too; the address lookup it adds is one index probe.
 */
const ADDRESS_LIKE = /^(?=[0-9a-f.:]*[.:])[0-9a-f.:]+$/;

/**
 * The SQL condition (over `nodes n`) that selects the nodes of `tenantId` under `filter`: what the list, its
 * total, its export and the bulk actions all read, so "every matching node" is exactly what the list shows.
 * Every value is a bind parameter. The indexes it leans on (migration 20261209110000): `(tenant_id, id)` for the
 * page and the total, the trigram index on `search_text`, the GIN index on `labels` (`@>`), and the partial
 * indexes on the join requests' addresses.
 *
 * - `search`: case-insensitive text in the id, hostname, serials, product UUID, MACs (any separators), GPU UUIDs,
 *   vendor, model or a label's value (the generated `search_text`); text that reads as an address also matches the
 *   nodes whose join request came from an address starting with it.
 * - `connected`: a live session, by the database's clock (a gateway lease not yet expired), as the rows show it.
 * - `expiringWithinSeconds`: the current certificate ends within that many seconds of the database's now.
 */
export function nodeCondition(tenantId: string, filter: NodeFilter): Prisma.Sql {
  const parts: Prisma.Sql[] = [Prisma.sql`n.tenant_id = ${tenantId}`];
  if (filter.poolId) parts.push(Prisma.sql`n.pool_id = ${filter.poolId}`);
  if (filter.siteId) parts.push(Prisma.sql`n.site_id = ${filter.siteId}`);
  if (filter.state) parts.push(Prisma.sql`n.state = ${filter.state}`);
  if (filter.connected !== undefined) {
    const live = Prisma.sql`EXISTS (SELECT 1 FROM node_sessions s JOIN gateway_leases g ON g.gateway_id = s.gateway_id
                                     WHERE s.node_id = n.id AND g.expires_at > compute_now())`;
    parts.push(filter.connected ? live : Prisma.sql`NOT ${live}`);
  }
  if (filter.role) parts.push(Prisma.sql`n.role = ${filter.role}`);
  if (filter.attestor) parts.push(Prisma.sql`n.attestor = ${filter.attestor}`);
  if (filter.nodeKey === 'trusted') parts.push(Prisma.sql`n.hardware_key_trusted`);
  if (filter.nodeKey === 'unattested') parts.push(Prisma.sql`n.hardware_key IS NOT NULL AND NOT n.hardware_key_trusted`);
  if (filter.nodeKey === 'none') parts.push(Prisma.sql`n.hardware_key IS NULL`);
  if (filter.trustVersion !== undefined) parts.push(Prisma.sql`n.trust_version = ${filter.trustVersion}`);
  if (filter.expiringWithinSeconds !== undefined)
    parts.push(Prisma.sql`n.cert_not_after <= compute_now() + ${filter.expiringWithinSeconds}::int * interval '1 second'`);
  for (const text of filter.labels ?? []) {
    const label = parseLabelArgument(text)!;
    parts.push(Prisma.sql`n.labels @> ${JSON.stringify({ [label.key]: label.value })}::jsonb`);
  }
  if (filter.search) parts.push(searchCondition(filter.search));
  return Prisma.join(parts, ' AND ');
}

function searchCondition(search: string): Prisma.Sql {
  const text = search.toLowerCase();
  if (!ADDRESS_LIKE.test(text)) return searchTextMatch(Prisma.sql`n.search_text`, search);
  // A union rather than an OR, so each side keeps its index (an OR with a subquery reads every node).
  const prefix = `${likeEscape(text)}%`;
  return Prisma.sql`n.id IN (
    SELECT m.id FROM nodes m WHERE ${searchTextMatch(Prisma.sql`m.search_text`, search)}
    UNION
    SELECT r.node_id FROM join_requests r
     WHERE r.node_id IS NOT NULL AND (lower(r.ip) LIKE ${prefix} OR lower(r.client_address) LIKE ${prefix}))`;
}

/**
 * The ids of the nodes `filter` selects, in id order, a page at a time (`after`: the last id of the previous page):
 * what an export or a bulk action walks, never every row at once.
 */
export async function matchingNodeIds(
  db: Db | Tx,
  tenantId: string,
  filter: NodeFilter,
  page: { after?: string; limit: number },
): Promise<string[]> {
  const after = page.after ? Prisma.sql`AND n.id > ${page.after}` : Prisma.empty;
  const rows = await db.$queryRaw<Array<{ id: string }>>`
    SELECT n.id FROM nodes n WHERE ${nodeCondition(tenantId, filter)} ${after} ORDER BY n.id LIMIT ${page.limit}::int`;
  return rows.map((row) => row.id);
}

/** How many nodes `filter` selects: the list's exact total. */
export async function countMatchingNodes(db: Db | Tx, tenantId: string, filter: NodeFilter): Promise<number> {
  const [row] = await db.$queryRaw<Array<{ total: number }>>`
    SELECT count(*)::int AS total FROM nodes n WHERE ${nodeCondition(tenantId, filter)}`;
  return row!.total;
}

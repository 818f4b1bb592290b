import { sql, type ExpressionBuilder } from 'kysely';
import type { Db, Tx } from '../db/client';
import type { DB } from '../db/generated/kysely/types';
import { typed, type Typed } from '../db/typed';
import { parseLabelArgument } from '../../protocol/api/labels';
import type { NodeFilter } from '../../protocol/api/node-filter';
import { likeEscape, searchPatterns } from '../db/search-text';

/**
 * Text that may be (the start of) an IPv4 or IPv6 address: digits and dots with a dot, or hex digits with a
 * colon. A MAC typed with colons reads as one too; the address lookup it adds is one index probe.
 */
const ADDRESS_LIKE = /^(?=[0-9a-f.:]*[.:])[0-9a-f.:]+$/;

type NodesScope = ExpressionBuilder<DB & { n: DB['nodes'] }, 'n'>;

/** `column LIKE ANY(patterns)` (server/db/search-text.ts): one read of the text, a trigram index scan per pattern. */
const likeAny = (search: string) => sql<string>`ANY(${searchPatterns(search)}::text[])`;

/**
 * The nodes (`nodes n`) of `tenantId` that `filter` selects: what the list, its total, its export and the bulk
 * actions all read, so "every matching node" is exactly what the list shows. Every value is a bind parameter.
 * The indexes it leans on (migration 20261209110000): `(tenant_id, id)` for the page and the total, the trigram
 * index on `search_text`, the GIN index on `labels` (`@>`), and the partial indexes on the join requests' addresses.
 *
 * - `search`: case-insensitive text in the id, hostname, serials, product UUID, MACs (any separators), GPU UUIDs,
 *   vendor, model or a label's value (the generated `search_text`); text that reads as an address also matches the
 *   nodes whose join request came from an address starting with it.
 * - `connected`: a live session, by the database's clock (a gateway lease not yet expired), as the rows show it.
 * - `expiringWithinSeconds`: the current certificate ends within that many seconds of the database's now.
 */
function matchingNodes(db: Typed, tenantId: string, filter: NodeFilter) {
  return db.selectFrom('nodes as n').where((eb) => eb.and(nodeConditions(eb, tenantId, filter)));
}

/** The node has a live session, by the database's clock (its gateway's lease has not expired). */
export function liveSession(eb: NodesScope) {
  return eb.exists(
    eb
      .selectFrom('node_sessions as s')
      .innerJoin('gateway_leases as g', 'g.gateway_id', 's.gateway_id')
      .select(eb.lit(1).as('live'))
      .whereRef('s.node_id', '=', 'n.id')
      .where('g.expires_at', '>', sql<Date>`compute_now()`),
  );
}

function nodeConditions(eb: NodesScope, tenantId: string, filter: NodeFilter) {
  const parts = [eb('n.tenant_id', '=', tenantId)];
  if (filter.poolId) parts.push(eb('n.pool_id', '=', filter.poolId));
  if (filter.siteId) parts.push(eb('n.site_id', '=', filter.siteId));
  if (filter.state) parts.push(eb('n.state', '=', filter.state));
  if (filter.connected !== undefined) {
    const live = liveSession(eb);
    parts.push(filter.connected ? live : eb.not(live));
  }
  if (filter.role) parts.push(eb('n.role', '=', filter.role));
  if (filter.attestor) parts.push(eb('n.attestor', '=', filter.attestor));
  if (filter.nodeKey === 'trusted') parts.push(eb.ref('n.hardware_key_trusted'));
  if (filter.nodeKey === 'unattested') parts.push(eb.and([eb('n.hardware_key', 'is not', null), eb.not(eb.ref('n.hardware_key_trusted'))]));
  if (filter.nodeKey === 'none') parts.push(eb('n.hardware_key', 'is', null));
  if (filter.trustVersion !== undefined) parts.push(eb('n.trust_version', '=', filter.trustVersion));
  if (filter.expiringWithinSeconds !== undefined)
    parts.push(eb('n.cert_not_after', '<=', sql<Date>`compute_now() + ${filter.expiringWithinSeconds}::int * interval '1 second'`));
  for (const text of filter.labels ?? []) {
    const label = parseLabelArgument(text)!;
    parts.push(eb('n.labels', '@>', sql`${JSON.stringify({ [label.key]: label.value })}::jsonb`));
  }
  if (filter.search) parts.push(searchCondition(eb, filter.search));
  return parts;
}

function searchCondition(eb: NodesScope, search: string) {
  const text = search.toLowerCase();
  if (!ADDRESS_LIKE.test(text)) return eb('n.search_text', 'like', likeAny(search));
  // A union rather than an OR, so each side keeps its index (an OR with a subquery reads every node).
  const prefix = `${likeEscape(text)}%`;
  return eb(
    'n.id',
    'in',
    eb
      .selectFrom('nodes as m')
      .select('m.id')
      .where('m.search_text', 'like', likeAny(search))
      .union(
        eb
          .selectFrom('join_requests as r')
          .select('r.node_id as id')
          .where('r.node_id', 'is not', null)
          .where((r) => r.or([r(r.fn('lower', ['r.ip']), 'like', prefix), r(r.fn('lower', ['r.client_address']), 'like', prefix)]))
          .$narrowType<{ id: string }>(),
      ),
  );
}

/** The page of the nodes `filter` selects, in id order after `page.after`: the list's, the export's, the bulk actions'. */
export function nodePageQuery(db: Typed, tenantId: string, filter: NodeFilter, page: { after?: string | null; limit: number }) {
  let query = matchingNodes(db, tenantId, filter);
  if (page.after) query = query.where('n.id', '>', page.after);
  return query.orderBy('n.id').limit(page.limit);
}

/** How many nodes `filter` selects. */
export function nodeCountQuery(db: Typed, tenantId: string, filter: NodeFilter) {
  return matchingNodes(db, tenantId, filter).select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('total'));
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
  const rows = await nodePageQuery(typed(db), tenantId, filter, page).select('n.id').execute();
  return rows.map((row) => row.id);
}

/** How many nodes `filter` selects: the list's exact total. */
export async function countMatchingNodes(db: Db | Tx, tenantId: string, filter: NodeFilter): Promise<number> {
  const row = await nodeCountQuery(typed(db), tenantId, filter).executeTakeFirstOrThrow();
  return row.total;
}

import { nodeListFilterOf, type NodeListParams } from './node-list-params';
import type { OverviewRange } from './overview-series';

/**
 * The inputs of the console pages' first queries, from the page's URL parameters. The page in the browser and
 * the server's read-ahead (app/(console)/page-readers.ts) build them here, so the query the server reads is the
 * one the page asks for (the same key). A parameter the page ignores is ignored here the same way.
 */

/** How many items the paged lists (events, refused joins, audit, a node's events, join tokens) read at a time. */
const LIST_PAGE_SIZE = 50;
/** How many nodes a page of the nodes list holds. */
const NODES_PAGE_SIZE = 100;

/** The refusal event the refused-joins page lists. */
const REFUSED_EVENT_TYPE = 'security.join.refused';

/** The cursor of a paged list's next page, or none (an infinite query's `getNextPageParam`). */
export const nextListPage = (page: { nextCursor: string | null }) => page.nextCursor ?? undefined;

/** The overview's period (`?range=`): the last 24 hours unless `7d`. */
export function overviewRange(param: string | null): OverviewRange {
  return param === '7d' ? '7d' : '24h';
}

/** `nodes.list`'s first page from the nodes page's URL (lib/node-list-params.ts; what it cannot read is left out). */
export function nodesListInput(tenantId: string, params: Partial<NodeListParams>) {
  return { tenantId, ...nodeListFilterOf(params).filter, limit: NODES_PAGE_SIZE };
}

/** A node's own events (`events.list` for one node), as its page lists them. */
export function nodeEventsInput(tenantId: string, nodeId: string) {
  return { tenantId, nodeId, limit: LIST_PAGE_SIZE };
}

/** The node page's commands, newest first: the first 20. */
export function nodeCommandsInput(tenantId: string, nodeId: string) {
  return { tenantId, nodeId, limit: 20 };
}

/** The events page's list, of one type when `?type=` names it. */
export function eventsListInput(tenantId: string, params: { type: string | null }) {
  return { tenantId, limit: LIST_PAGE_SIZE, ...(params.type ? { type: params.type } : {}) };
}

/** The refused-joins page's list: `?reason=`, and `since` when a range is chosen (the browser's clock fixes it). */
export function refusedJoinsInput(tenantId: string, params: { reason: string | null }, since?: string) {
  return {
    tenantId,
    type: REFUSED_EVENT_TYPE,
    limit: LIST_PAGE_SIZE,
    ...(params.reason ? { reason: params.reason } : {}),
    ...(since ? { since } : {}),
  };
}

/**
 * The audit page's list: `?action=` and `?actor=` match exactly (the page's facets), within the time range's
 * `bounds` (none when the page shows all time).
 */
export function auditListInput(
  tenantId: string,
  params: { actor: string | null; action: string | null },
  bounds: { since?: string; until?: string } = {},
) {
  return {
    tenantId,
    limit: LIST_PAGE_SIZE,
    ...(params.action ? { actionEquals: params.action } : {}),
    ...(params.actor ? { actorEquals: params.actor } : {}),
    ...bounds,
  };
}

/** A pool's join tokens, live ones only unless `includeInactive`. */
export function joinTokensListInput(tenantId: string, poolId: string, includeInactive: boolean) {
  return { tenantId, poolId, includeInactive, limit: LIST_PAGE_SIZE };
}

/** The site a per-site page shows: `?site=` when given, else the tenant's first site; null while there is none. */
export function pageSiteOf(param: string | null, sites: readonly { id: string }[] | undefined): string | null {
  return param ?? sites?.[0]?.id ?? null;
}

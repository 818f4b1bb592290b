import type { FetchInfiniteQueryOptions, FetchQueryOptions, QueryClient } from '@tanstack/react-query';
import type { TRPCOptionsProxy } from '@trpc/tanstack-react-query';
import type { Tenant } from '@/lib/api-types';
import { NODE_LIST_PARAMS } from '@/lib/node-list-params';
import { can } from '@/lib/can';
import {
  auditListInput,
  eventsListInput,
  joinTokensListInput,
  nextListPage,
  nodeCommandsInput,
  nodeEventsInput,
  nodesListInput,
  overviewRange,
  pageSiteOf,
  refusedJoinsInput,
} from '@/lib/console-page-inputs';
import {
  QUEUE_FILTER_PARAMS,
  joinablePools,
  nextQueuePage,
  queueFilterOf,
  queueListInput,
  queuePoolOf,
  toQueueFilter,
} from '@/lib/join-request-queue';
import { selectTenant, TENANTS_STALE_MS } from '@/lib/tenant-selection';
import { TENANT_PARAM } from '@/lib/tenant-url';
import type { PrefetchReader } from '@/server/api/prefetch';
import type { AppRouter } from '@/server/api/root';

/**
 * What each console page reads ahead on the server for its first render: the queries its view asks for on
 * its first render in the browser, with the same inputs (lib/console-page-inputs.ts, lib/join-request-queue.ts)
 * and so the same keys. A read the next one depends on (the tenant's pools, to choose one) is fetched, and its
 * failure leaves the page to the browser; the others are prefetched, and one that fails (a role not allowed
 * to read it) is left for the browser to read and report as it would have.
 */

type Trpc = TRPCOptionsProxy<AppRouter>;

/** What a page's reader gets: the console's query options, the server's query client, the tenant shown and the URL. */
interface TenantPageRead {
  trpc: Trpc;
  queryClient: QueryClient;
  tenant: Tenant;
  params: URLSearchParams;
}
export type TenantPageReader = (read: TenantPageRead) => Promise<unknown>;

/**
 * The operator's tenants (every page and the console's shell show them), then `page`'s queries for the tenant
 * the browser will show (`selectTenant` of the same `?tenant=`); none when it shows no tenant.
 */
export function readConsolePage(params: URLSearchParams, page?: TenantPageReader): PrefetchReader {
  return async (trpc, queryClient) => {
    const tenants = await queryClient.fetchQuery(trpc.tenants.list.queryOptions({}, { staleTime: TENANTS_STALE_MS }));
    const selected = selectTenant(tenants.items, params.get(TENANT_PARAM));
    if (selected.status === 'ready' && page) await page({ trpc, queryClient, tenant: selected.tenant, params });
  };
}

type AnyQuery = FetchQueryOptions<any, any, any, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type AnyInfiniteQuery = FetchInfiniteQueryOptions<any, any, any, any, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Prefetches queries side by side; one that fails is left out of the page's state (the browser reads it). */
function prefetch(queryClient: QueryClient, queries: AnyQuery[], lists: AnyInfiniteQuery[] = []) {
  return Promise.all([...queries.map((q) => queryClient.prefetchQuery(q)), ...lists.map((l) => queryClient.prefetchInfiniteQuery(l))]);
}

/** The first page of a paged list, read as the page's infinite query reads it. */
const paged = { getNextPageParam: nextListPage };

/** `?name=` of each name, as the view's useUrlParams reads them. */
function paramsOf<K extends string>(params: URLSearchParams, names: readonly K[]): Record<K, string | null> {
  return Object.fromEntries(names.map((name) => [name, params.get(name)])) as Record<K, string | null>;
}

/** The tenant's sites and pools, fetched: pages choose a pool or a site from them. */
async function sitesAndPools({ trpc, queryClient, tenant }: TenantPageRead) {
  const [sites, pools] = await Promise.all([
    queryClient.fetchQuery(trpc.sites.list.queryOptions({ tenantId: tenant.id })),
    queryClient.fetchQuery(trpc.pools.list.queryOptions({ tenantId: tenant.id })),
  ]);
  return { sites: sites.items, pools: pools.items };
}

export const readOverview: TenantPageReader = ({ trpc, queryClient, tenant, params }) =>
  prefetch(queryClient, [trpc.overview.get.queryOptions({ tenantId: tenant.id, range: overviewRange(params.get('range')) })]);

export const readPools: TenantPageReader = ({ trpc, queryClient, tenant }) => {
  // The page's first view leaves archived sites and pools out.
  const scope = { tenantId: tenant.id, includeArchived: false };
  return prefetch(queryClient, [
    trpc.sites.list.queryOptions(scope),
    trpc.pools.list.queryOptions(scope),
    trpc.pools.counts.queryOptions({ tenantId: tenant.id }),
  ]);
};

export const readSites: TenantPageReader = ({ trpc, queryClient, tenant }) =>
  // The page's first view leaves archived sites out.
  prefetch(queryClient, [trpc.sites.list.queryOptions({ tenantId: tenant.id, includeArchived: false })]);

export const readJoinTokens: TenantPageReader = async (read) => {
  const pool = queuePoolOf(joinablePools((await sitesAndPools(read)).pools), read.params.get('pool'));
  if (pool)
    await prefetch(
      read.queryClient,
      [],
      [read.trpc.joinTokens.list.infiniteQueryOptions(joinTokensListInput(read.tenant.id, pool.id, false), paged)],
    );
};

export const readJoinRequests: TenantPageReader = async (read) => {
  const { trpc, queryClient, tenant, params } = read;
  const pool = queuePoolOf(joinablePools((await sitesAndPools(read)).pools), params.get('pool'));
  if (!pool) return;
  const { filter: matching } = queueFilterOf(paramsOf(params, QUEUE_FILTER_PARAMS));
  const input = queueListInput({ tenantId: tenant.id, poolId: pool.id }, toQueueFilter(params.get('state')), matching);
  // Fetched, as the queue's own read-ahead always was: a refused queue renders the page as the browser would.
  await queryClient.fetchInfiniteQuery(trpc.joinRequests.list.infiniteQueryOptions(input, { getNextPageParam: nextQueuePage }));
};

export const readNodes: TenantPageReader = ({ trpc, queryClient, tenant, params }) =>
  prefetch(
    queryClient,
    [trpc.sites.list.queryOptions({ tenantId: tenant.id }), trpc.pools.list.queryOptions({ tenantId: tenant.id })],
    [trpc.nodes.list.infiniteQueryOptions(nodesListInput(tenant.id, paramsOf(params, NODE_LIST_PARAMS)), paged)],
  );

/** One node's page: the node, its commands (the input the Commands section asks with) and its events. */
export const readNode =
  (nodeId: string): TenantPageReader =>
  ({ trpc, queryClient, tenant }) =>
    prefetch(
      queryClient,
      [trpc.nodes.get.queryOptions({ tenantId: tenant.id, nodeId }), trpc.commands.list.queryOptions(nodeCommandsInput(tenant.id, nodeId))],
      [trpc.events.list.infiniteQueryOptions(nodeEventsInput(tenant.id, nodeId), paged)],
    );

export const readRefusedJoins: TenantPageReader = ({ trpc, queryClient, tenant, params }) =>
  // A chosen range starts at the browser's clock, which the server cannot know: that list is the browser's to read.
  prefetch(
    queryClient,
    [],
    params.get('range') ? [] : [trpc.events.list.infiniteQueryOptions(refusedJoinsInput(tenant.id, paramsOf(params, ['reason'])), paged)],
  );

export const readEvents: TenantPageReader = ({ trpc, queryClient, tenant, params }) =>
  prefetch(queryClient, [], [trpc.events.list.infiniteQueryOptions(eventsListInput(tenant.id, paramsOf(params, ['type'])), paged)]);

export const readAudit: TenantPageReader = ({ trpc, queryClient, tenant, params }) =>
  // A time range starts at the browser's clock, which the server cannot know: that list is the browser's to read.
  params.get('range')
    ? Promise.resolve()
    : prefetch(
        queryClient,
        [trpc.audit.facets.queryOptions({ tenantId: tenant.id })],
        [trpc.audit.list.infiniteQueryOptions(auditListInput(tenant.id, paramsOf(params, ['actor', 'action'])), paged)],
      );

export const readApprovalRules: TenantPageReader = async (read) => {
  const siteId = pageSiteOf(read.params.get('site'), (await sitesAndPools(read)).sites);
  if (siteId) await prefetch(read.queryClient, [read.trpc.approvalRules.list.queryOptions({ tenantId: read.tenant.id, siteId })]);
};

export const readExpectedMachines: TenantPageReader = async (read) => {
  const { trpc, queryClient, tenant, params } = read;
  const siteId = pageSiteOf(params.get('site'), (await sitesAndPools(read)).sites);
  if (!siteId) return;
  const scope = { tenantId: tenant.id, siteId };
  await prefetch(queryClient, [
    trpc.expectedMachines.list.queryOptions({ ...scope, state: 'waiting' }),
    trpc.expectedMachines.list.queryOptions({ ...scope, state: 'arrived' }),
    trpc.expectedMachines.unmatched.queryOptions(scope),
  ]);
};

export const readWebhooks: TenantPageReader = ({ trpc, queryClient, tenant }) =>
  prefetch(queryClient, can(tenant, 'compute:webhooks:read') ? [trpc.webhooks.list.queryOptions({ tenantId: tenant.id })] : []);

export const readOperators: TenantPageReader = ({ trpc, queryClient, tenant }) =>
  prefetch(
    queryClient,
    can(tenant, 'compute:operators:read')
      ? [trpc.operators.list.queryOptions({ tenantId: tenant.id }), trpc.invitations.list.queryOptions({ tenantId: tenant.id })]
      : [],
  );

export const readApiKeys: TenantPageReader = ({ trpc, queryClient, tenant }) =>
  prefetch(queryClient, can(tenant, 'compute:api-keys:read') ? [trpc.apiKeys.list.queryOptions({ tenantId: tenant.id })] : []);

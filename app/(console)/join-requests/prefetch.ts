import type { DehydratedState } from '@tanstack/react-query';
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
import { prefetchAsConsole } from '@/server/api/prefetch';
import { getSessionOperatorId } from '@/server/auth/session';
import { processServices } from '@/server/boot/services';

/**
 * The queries the queue's first render needs, read on the server in the order the page reads them in the
 * browser (the operator's tenants, then the tenant's sites and pools, then the first page of the chosen pool's
 * queue), with the same inputs built by the same functions from the same URL. Null when any of them fails.
 */
export function prefetchJoinRequestQueue(params: URLSearchParams): Promise<DehydratedState | null> {
  return prefetchAsConsole({ db: processServices().db, sessionOperatorId: getSessionOperatorId }, async (trpc, queryClient) => {
    const tenants = await queryClient.fetchQuery(trpc.tenants.list.queryOptions({}, { staleTime: TENANTS_STALE_MS }));
    const selected = selectTenant(tenants.items, params.get(TENANT_PARAM));
    if (selected.status !== 'ready') return;
    const tenantId = selected.tenant.id;
    const [, pools] = await Promise.all([
      queryClient.fetchQuery(trpc.sites.list.queryOptions({ tenantId })),
      queryClient.fetchQuery(trpc.pools.list.queryOptions({ tenantId })),
    ]);
    const pool = queuePoolOf(joinablePools(pools.items), params.get('pool'));
    if (!pool) return;
    const { filter: matching } = queueFilterOf(
      Object.fromEntries(QUEUE_FILTER_PARAMS.map((name) => [name, params.get(name)])) as Parameters<typeof queueFilterOf>[0],
    );
    const input = queueListInput({ tenantId, poolId: pool.id }, toQueueFilter(params.get('state')), matching);
    await queryClient.fetchInfiniteQuery(trpc.joinRequests.list.infiniteQueryOptions(input, { getNextPageParam: nextQueuePage }));
  });
}

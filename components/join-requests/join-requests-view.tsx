'use client';

import { useInfiniteQuery, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useState } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { PoolPicker } from '@/components/join-tokens/pool-picker';
import { LoadingRows, LoadMore, QueryError } from '@/components/ui/query-state';
import type { Pool, Tenant } from '@/lib/api-types';
import { can } from '@/lib/can';
import {
  QUEUE_FILTERS,
  QUEUE_PARAMS,
  isFiltered,
  joinablePools as joinableOf,
  mergeRows,
  nextQueuePage,
  queueFilterOf,
  queueListInput,
  queuePoolOf,
  toQueueFilter,
  type QueueFilter,
} from '@/lib/join-request-queue';
import type { RequestFilter } from '@/protocol/api/join-request-filter';
import { useLiveRefresh } from '@/lib/live';
import { withTenant } from '@/lib/tenant-url';
import { useTRPC, useTRPCClient } from '@/lib/trpc';
import { useHydrated, useNow } from '@/lib/use-now';
import { useUrlParams } from '@/lib/url-state';
import type { JoinRequestRecord } from '@/protocol/api/join-request-schemas';
import { QueueFilters } from './queue-filters';
import { RequestQueue } from './request-queue';

export function JoinRequestsView() {
  return <TenantGate>{(tenant) => <TenantJoinRequests key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/** The join requests of one pool's site (`?pool=`, else the first bcd pool), filtered by `?state=`. */
function TenantJoinRequests({ tenant }: { tenant: Tenant }) {
  const trpc = useTRPC();
  const [params, setParams] = useUrlParams(QUEUE_PARAMS);
  const sites = useQuery(trpc.sites.list.queryOptions({ tenantId: tenant.id }));
  const pools = useQuery(trpc.pools.list.queryOptions({ tenantId: tenant.id }));
  // Requests are approved into a pool whose machines run the daemon; the others cannot take a join.
  const joinablePools = joinableOf(pools.data?.items ?? []);
  const pool: Pool | undefined = queuePoolOf(joinablePools, params.pool);
  const siteNames = new Map(sites.data?.items.map((site) => [site.id, site.name]));
  const filter = toQueueFilter(params.state);
  const { filter: matching, ignored } = queueFilterOf(params);
  // The server renders the queue with its rows (the page's prefetch); its controls do nothing until the page's
  // scripts run, so they stay disabled until then rather than drop a click or a key.
  const isHydrated = useHydrated();

  return (
    <fieldset className="until-hydrated" disabled={!isHydrated}>
      <PageHeader
        title="Join requests"
        description={
          <>
            Machines the <code>discovery</code> or <code>tpm</code> attestor deferred to an operator: nothing is issued until one is
            approved. Tenant <strong>{tenant.name}</strong>.
          </>
        }
        actions={
          <>
            {joinablePools.length > 0 && (
              <PoolPicker
                pools={joinablePools}
                siteNames={siteNames}
                value={pool?.id ?? ''}
                onChange={(poolId) => setParams({ pool: poolId })}
              />
            )}
            <div className="picker">
              <label htmlFor="request-state" className="picker-label">
                State
              </label>
              <select
                id="request-state"
                value={filter}
                onChange={(event) => setParams({ state: event.target.value === 'pending' ? null : event.target.value })}
              >
                {QUEUE_FILTERS.map((state) => (
                  <option key={state} value={state}>
                    {state}
                  </option>
                ))}
              </select>
            </div>
          </>
        }
      />
      <QueueFilters params={params} onChange={setParams} ignored={ignored} />
      {pools.isPending ? (
        <LoadingRows label="Loading pools…" />
      ) : pools.isError ? (
        <QueryError error={pools.error} what="pools" onRetry={() => void pools.refetch()} />
      ) : joinablePools.length === 0 ? (
        <div className="callout">
          <strong>This tenant has no pool whose machines run bcd.</strong> A join request is approved into such a pool; create one on the{' '}
          <Link href={withTenant('/pools', tenant.id)}>Pools</Link> page first.
        </div>
      ) : !pool ? (
        <div className="callout callout-error" role="alert">
          <strong>Pool “{params.pool}” not found.</strong> It does not exist in tenant {tenant.name}, is archived, or its machines run no
          daemon. Choose a pool above.
        </div>
      ) : (
        <PoolQueue
          key={`${pool.id}/${filter}/${JSON.stringify(matching)}`}
          tenant={tenant}
          pool={pool}
          sitePools={joinablePools.filter((p) => p.siteId === pool.siteId)}
          siteName={siteNames.get(pool.siteId) ?? pool.siteId}
          filter={filter}
          matching={matching}
          initialRequest={params.request}
        />
      )}
    </fieldset>
  );
}

interface PoolQueueProps {
  tenant: Tenant;
  pool: Pool;
  sitePools: Pool[];
  siteName: string;
  filter: QueueFilter;
  /** The search and filters (from the URL), decided on the server. */
  matching: RequestFilter;
  /** `?request=`: the request to show first (an event's link). */
  initialRequest: string | null;
}

/**
 * The list, live: each announcement of `joinRequests.onChange` re-reads the list, and the requests it
 * names that are on screen are read one by one, so a row decided elsewhere shows that decision in place.
 */
function PoolQueue({ tenant, pool, sitePools, siteName, filter, matching, initialRequest }: PoolQueueProps) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const queryClient = useQueryClient();
  const ref = { tenantId: tenant.id, poolId: pool.id };
  // The same query (key and input) the server may have read ahead for the first render (./prefetch in the page).
  const list = useInfiniteQuery(
    trpc.joinRequests.list.infiniteQueryOptions(queueListInput(ref, filter, matching), { getNextPageParam: nextQueuePage }),
  );
  // Decisions this page learned of (its own, and others' on rows it shows), kept until the filter changes.
  const [known, setKnown] = useState<Map<string, JoinRequestRecord>>(new Map());
  // The queue's last result in words, kept here so that a moment without rows (the queue unmounted) loses none.
  const [notices, setNotices] = useState<string[]>([]);
  const remember = (records: JoinRequestRecord[]) =>
    setKnown((current) => {
      const next = new Map(current);
      for (const record of records) next.set(record.id, record);
      return next;
    });
  const items = list.data?.pages.flatMap((page) => page.items) ?? [];
  // The server's count of every match, with the time it was read (what "select all matching" decides up to).
  const firstPage = list.data?.pages[0];
  const total = firstPage?.total ?? 0;
  const rows = filter === 'pending' || filter === 'all' ? mergeRows(items, known) : items;
  const shown = new Set(rows.map((row) => row.id));

  useLiveRefresh([trpc.joinRequests.list.pathFilter(), trpc.pools.counts.pathFilter()], {
    joinRequestsOf: ref,
    onJoinRequests: (requestIds) => {
      const onScreen = requestIds.filter((id) => shown.has(id));
      void Promise.all(onScreen.map((requestId) => client.joinRequests.get.query({ ...ref, requestId }).catch(() => null))).then(
        (records) => remember(records.filter((r): r is JoinRequestRecord => r !== null && r.state !== 'pending')),
      );
    },
  });

  // Ages and expiries read the browser's clock, which the server-rendered HTML cannot: they appear once hydrated.
  const clock = useNow(30_000);
  const now = useHydrated() ? clock : null;

  const headingId = `queue-${pool.id}`;
  return (
    <section className="panel queue-panel" aria-labelledby={headingId}>
      <header className="panel-header">
        <h2 id={headingId}>
          <span className="panel-eyebrow">Site </span>
          {siteName}
        </h2>
        <span className="badge" title="Pool">
          pool {pool.name}
        </span>
        {list.isSuccess && (
          <span className="panel-meta" data-testid="queue-count">
            {total} {filter === 'all' ? '' : `${filter} `}
            {total === 1 ? 'request' : 'requests'}
            {isFiltered(matching) ? ' matching' : ''}
            {total > items.length ? ` (${items.length} shown)` : ''}
          </span>
        )}
      </header>
      {list.isPending ? (
        <div className="panel-empty">
          <LoadingRows label="Loading join requests…" />
        </div>
      ) : list.isError ? (
        <QueryError error={list.error} what="join requests" onRetry={() => void list.refetch()} />
      ) : rows.length === 0 ? (
        <p className="panel-empty">
          {isFiltered(matching)
            ? 'No request matches the search and filters.'
            : filter === 'pending'
              ? 'No machine is waiting. New requests appear here as they arrive.'
              : `No ${filter === 'all' ? '' : `${filter} `}requests.`}
        </p>
      ) : (
        <RequestQueue
          rows={rows}
          initialRequest={initialRequest}
          now={now}
          pool={pool}
          sitePools={sitePools}
          tenant={tenant}
          canDecide={can(tenant, 'compute:join-requests:decide')}
          matching={
            filter === 'pending' && firstPage
              ? {
                  filter: matching,
                  total,
                  asOf: firstPage.asOf,
                  isFiltered: isFiltered(matching),
                  notVendorCertified: firstPage.notVendorCertified,
                }
              : null
          }
          notices={notices}
          onNotices={setNotices}
          onDecided={(records) => {
            remember(records);
            void queryClient.invalidateQueries(trpc.joinRequests.list.pathFilter());
            void queryClient.invalidateQueries(trpc.pools.counts.pathFilter());
          }}
        />
      )}
      <LoadMore query={list} label="Load more" />
    </section>
  );
}

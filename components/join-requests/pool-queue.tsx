'use client';

import { useInfiniteQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { LoadMore } from '@/components/ui/query-state';
import type { Pool, Tenant } from '@/lib/api-types';
import { can } from '@/lib/can';
import { isFiltered, mergeRows, nextQueuePage, queueListInput, type QueueFilter } from '@/lib/join-request-queue';
import { useLiveRefresh } from '@/lib/live';
import { useTRPC, useTRPCClient } from '@/lib/trpc';
import { useHydrated, useNow } from '@/lib/use-now';
import type { RequestFilter } from '@/protocol/api/join-request-filter';
import type { JoinRequestRecord } from '@/protocol/api/join-request-schemas';
import { QueueStates } from './queue-states';
import { RequestQueue } from './request-queue';

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
export function PoolQueue({ tenant, pool, sitePools, siteName, filter, matching, initialRequest }: PoolQueueProps) {
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
      <QueueStates list={list} rows={rows} filter={filter} isFiltered={isFiltered(matching)}>
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
      </QueueStates>
      <LoadMore query={list} label="Load more" />
    </section>
  );
}

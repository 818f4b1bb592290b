'use client';

import { useInfiniteQuery } from '@tanstack/react-query';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { formatTimestamp } from '@/components/ui/format';
import { LoadingRows, LoadMore, QueryError } from '@/components/ui/query-state';
import type { Tenant } from '@/lib/api-types';
import { useTRPC } from '@/lib/trpc';

const PAGE_SIZE = 50;

export function EventsView() {
  return <TenantGate>{(tenant) => <TenantEvents key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/** The tenant's events, newest first, a page at a time. */
function TenantEvents({ tenant }: { tenant: Tenant }) {
  const trpc = useTRPC();
  const events = useInfiniteQuery(
    trpc.events.list.infiniteQueryOptions(
      { tenantId: tenant.id, limit: PAGE_SIZE },
      { getNextPageParam: (page) => page.nextCursor ?? undefined },
    ),
  );
  const items = events.data?.pages.flatMap((page) => page.items) ?? [];
  return (
    <>
      <PageHeader
        title="Events"
        description={
          <>
            What happened in tenant <strong>{tenant.name}</strong>, newest first.
          </>
        }
        actions={
          <button type="button" className="btn" onClick={() => void events.refetch()} disabled={events.isFetching}>
            {events.isRefetching && !events.isFetchingNextPage ? 'Refreshing…' : 'Refresh'}
          </button>
        }
      />
      {events.isPending ? (
        <LoadingRows label="Loading events…" />
      ) : events.isError ? (
        <QueryError error={events.error} what="events" onRetry={() => void events.refetch()} />
      ) : items.length === 0 ? (
        <div className="callout">No events in this tenant yet.</div>
      ) : (
        <section className="panel" aria-label="Events">
          <div className="table-scroll">
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Time (UTC)</th>
                  <th scope="col">Type</th>
                  <th scope="col">Details</th>
                </tr>
              </thead>
              <tbody>
                {items.map((event) => (
                  <tr key={event.id}>
                    <td className="cell-time">
                      <time dateTime={event.createdAt}>{formatTimestamp(event.createdAt, { zone: false })}</time>
                    </td>
                    <td>
                      <code>{event.type}</code>
                    </td>
                    <td className="cell-data">
                      <code>{JSON.stringify(event.data)}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <LoadMore query={events} label="Load older events" />
        </section>
      )}
    </>
  );
}

'use client';

import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useState } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { LoadMore, QueryStates } from '@/components/ui/query-state';
import { nextListPage, nodesListInput } from '@/lib/console-page-inputs';
import type { Tenant } from '@/lib/api-types';
import { useLiveRefresh } from '@/lib/live';
import { NODE_LIST_PARAMS, nodeExportHref, nodeListFilterOf } from '@/lib/node-list-params';
import { withTenant } from '@/lib/tenant-url';
import { useTRPC } from '@/lib/trpc';
import { useNowSince } from '@/lib/use-now';
import { useUrlParams } from '@/lib/url-state';
import { NodeFilters } from './node-filters';
import { NodeTable } from './node-table';
import { NodeBulkBar } from './node-bulk-bar';

const totalText = (total: number, isFiltered: boolean) =>
  `${total.toLocaleString('en-US')} ${total === 1 ? 'node' : 'nodes'}${isFiltered ? (total === 1 ? ' matches' : ' match') : ''}`;

export function NodesView() {
  return <TenantGate>{(tenant) => <TenantNodes key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/**
 * Which nodes the operator ticked: some loaded rows, or every node the filter selects (`allMatching`, the
 * server's `total`, walked page by page by the bulk actions). A new filter clears it.
 */
interface Selection {
  allMatching: boolean;
  ids: ReadonlySet<string>;
}
const NOTHING: Selection = { allMatching: false, ids: new Set() };

/** The tenant's nodes: searched and filtered on the server (the filter in the URL), with the exact total, paged. */
function TenantNodes({ tenant }: { tenant: Tenant }) {
  const trpc = useTRPC();
  const [params, setParams] = useUrlParams(NODE_LIST_PARAMS);
  const sites = useQuery(trpc.sites.list.queryOptions({ tenantId: tenant.id }));
  const pools = useQuery(trpc.pools.list.queryOptions({ tenantId: tenant.id }));
  const { filter, ignored } = nodeListFilterOf(params);
  const input = nodesListInput(tenant.id, params);
  const nodes = useInfiniteQuery(trpc.nodes.list.infiniteQueryOptions(input, { getNextPageParam: nextListPage }));
  // A machine joins, renews or is revoked away from this page: re-read on return (no announcement yet).
  useLiveRefresh(trpc.nodes.list.pathFilter(), { eventsOf: tenant.id });
  const now = useNowSince(nodes.dataUpdatedAt);
  const poolNames = new Map(pools.data?.items.map((pool) => [pool.id, pool.name]));
  const items = nodes.data?.pages.flatMap((page) => page.items) ?? [];
  const total = nodes.data?.pages[0]?.total ?? null;
  const isFiltered = Object.keys(filter).length > 0;

  const filterKey = JSON.stringify(filter);
  const [selection, setSelection] = useState<Selection & { filterKey: string }>({ ...NOTHING, filterKey });
  const current = selection.filterKey === filterKey ? selection : { ...NOTHING, filterKey };
  const allLoadedSelected = current.allMatching || (items.length > 0 && items.every((n) => current.ids.has(n.id)));
  const selectedCount = current.allMatching ? (total ?? 0) : current.ids.size;
  // The ticked rows as the table shows them; ticking one leaves "all matching" for the loaded rows ticked.
  const loadedSelected: ReadonlySet<string> = current.allMatching ? new Set(items.map((n) => n.id)) : current.ids;
  const select = (ids: Set<string>) => setSelection({ allMatching: false, ids, filterKey });
  // For the bulk actions: the ticked ids, or null for "every node the filter selects" (`total` of them).
  const selectedIds = current.allMatching ? null : [...current.ids];

  return (
    <>
      <PageHeader
        title="Nodes"
        description={
          <>
            Machines that joined, with their identity and acceptance state. Tenant <strong>{tenant.name}</strong>.
          </>
        }
        actions={
          <a className="btn node-export" href={nodeExportHref(tenant.id, filter)} download>
            Export CSV
          </a>
        }
      />
      <NodeFilters params={params} onChange={setParams} pools={pools.data?.items ?? []} sites={sites.data?.items ?? []} ignored={ignored} />
      <section className="panel" aria-labelledby="nodes-list-heading">
        <header className="panel-header">
          <h2 id="nodes-list-heading">{isFiltered ? 'Matching nodes' : 'All nodes'}</h2>
          <span className="panel-meta" data-testid="nodes-total" aria-live="polite">
            {total === null ? '' : totalText(total, isFiltered)}
            {total !== null && items.length < total ? `, ${items.length.toLocaleString('en-US')} shown` : ''}
          </span>
        </header>
        {selectedCount > 0 && (
          <div
            className="queue-actions node-selection"
            role="region"
            aria-label="Selected nodes"
            data-selected={selectedIds === null ? 'all-matching' : selectedIds.length}
          >
            <span>
              {current.allMatching ? `All ${selectedCount.toLocaleString('en-US')} matching selected` : `${selectedCount} selected`}
            </span>
            {!current.allMatching && allLoadedSelected && total !== null && total > items.length && (
              <button
                type="button"
                className="btn btn-small"
                onClick={() => setSelection({ allMatching: true, ids: new Set(), filterKey })}
              >
                Select all {total.toLocaleString('en-US')} {isFiltered ? 'matching' : 'nodes'}
              </button>
            )}
            <button type="button" className="btn btn-small" onClick={() => setSelection({ ...NOTHING, filterKey })}>
              Clear selection
            </button>
            <NodeBulkBar tenantId={tenant.id} filter={filter} selectedIds={selectedIds} total={total ?? 0} />
          </div>
        )}
        <QueryStates
          query={nodes}
          items={items}
          loading="Loading nodes…"
          what="nodes"
          empty={
            isFiltered ? (
              <>No node matches this search and these filters.</>
            ) : (
              <>
                No node joined yet. A machine joins with a token from the{' '}
                <Link href={withTenant('/join-tokens', tenant.id)}>Join tokens</Link> page, or is approved on the{' '}
                <Link href={withTenant('/join-requests', tenant.id)}>Join requests</Link> page.
              </>
            )
          }
        >
          {() => (
            <NodeTable nodes={items} tenantId={tenant.id} now={now} poolNames={poolNames} selected={loadedSelected} onSelect={select} />
          )}
        </QueryStates>
        <LoadMore query={nodes} label="Load more nodes" />
      </section>
    </>
  );
}

'use client';

import { useInfiniteQuery } from '@tanstack/react-query';
import { useId, useMemo } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { DataTable, type DataColumn } from '@/components/ui/data-table';
import { LoadMore, QueryStates } from '@/components/ui/query-state';
import { LocalTime, ShortHash } from '@/components/ui/time';
import { nextListPage, refusedJoinsInput } from '@/lib/console-page-inputs';
import type { Tenant } from '@/lib/api-types';
import { useLiveRefresh } from '@/lib/live';
import { explainRefusal, REFUSAL_REASONS } from '@/lib/refusal-reasons';
import { useTRPC } from '@/lib/trpc';
import { useUrlParams } from '@/lib/url-state';

/** The time ranges offered, as `?range=`; none means all time. */
const RANGES = [
  { value: '1h', label: 'Last hour', ms: 3_600_000 },
  { value: '24h', label: 'Last 24 hours', ms: 86_400_000 },
  { value: '7d', label: 'Last 7 days', ms: 7 * 86_400_000 },
] as const;

interface RefusalData {
  attestor?: string;
  reason?: string;
  role?: string;
  csrSha256?: string;
  hardwareKey?: string | null;
  suppressed?: number;
  /** Present once the token's secret verified. */
  tokenId?: string;
  /** For join:expect: the binding the machine did not satisfy. */
  expectField?: string;
  /** Where the join came from; for a join the gateway relayed, the gateway's caller (signed by the gateway). */
  clientAddress?: string;
}

export function RefusedJoinsView() {
  return <TenantGate>{(tenant) => <TenantRefusedJoins key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/** The tenant's `security.join.refused` events, newest first, with what each reason means and what to do. */
function TenantRefusedJoins({ tenant }: { tenant: Tenant }) {
  const trpc = useTRPC();
  const [params, setParams] = useUrlParams(['reason', 'range'] as const);
  const reason = params.reason ?? '';
  const range = RANGES.find((r) => r.value === params.range) ?? null;
  // Fixed when the range is chosen, so the query key (and its cache) does not change on every render.
  const since = useMemo(() => (range ? new Date(Date.now() - range.ms).toISOString() : undefined), [range]);
  const reasonId = useId();
  const rangeId = useId();
  const refusals = useInfiniteQuery(
    trpc.events.list.infiniteQueryOptions(refusedJoinsInput(tenant.id, params, since), { getNextPageParam: nextListPage }),
  );
  useLiveRefresh(trpc.events.list.pathFilter(), { eventsOf: tenant.id });
  const items = refusals.data?.pages.flatMap((page) => page.items) ?? [];

  return (
    <>
      <PageHeader
        title="Refused joins"
        description={
          <>
            Joins refused in tenant <strong>{tenant.name}</strong>, newest first. The machine is only told “Join refused”; the reason is
            here.
          </>
        }
        actions={
          <button type="button" className="btn" onClick={() => void refusals.refetch()} disabled={refusals.isFetching}>
            {refusals.isRefetching && !refusals.isFetchingNextPage ? 'Refreshing…' : 'Refresh'}
          </button>
        }
      />
      <div className="filters">
        <div className="field">
          <label htmlFor={reasonId} className="field-label">
            Reason
          </label>
          <select id={reasonId} value={reason} onChange={(event) => setParams({ reason: event.target.value || null })}>
            <option value="">All reasons</option>
            {Object.keys(REFUSAL_REASONS)
              .sort()
              .map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={rangeId} className="field-label">
            Time range
          </label>
          <select id={rangeId} value={range?.value ?? ''} onChange={(event) => setParams({ range: event.target.value || null })}>
            <option value="">All time</option>
            {RANGES.map((r) => (
              <option key={r.value} value={r.value}>
                {r.label}
              </option>
            ))}
          </select>
        </div>
      </div>
      <QueryStates
        query={refusals}
        items={items}
        loading="Loading refused joins…"
        what="refused joins"
        empty={reason || range ? 'No refused joins match these filters.' : 'No join was refused in this tenant.'}
      >
        {() => (
          <section className="panel" aria-label="Refused joins">
            <p className="panel-notice" id="suppressed-meaning">
              <strong>Suppressed</strong> counts the refusals of the same reason that the rate limit (60 events per reason and minute)
              recorded no event for, just before this one: the joins were refused all the same, only their events were dropped. The token is
              named once its secret verified. The caller is the address the join came from; for a join relayed by the gateway, the address
              the gateway saw (the gateway signs it).
            </p>
            <div className="table-scroll">
              <DataTable bare rows={items} columns={refusalColumns} rowKey={(event) => event.id} label="Refused joins" />
            </div>
            <LoadMore query={refusals} label="Load older refusals" />
          </section>
        )}
      </QueryStates>
    </>
  );
}

type RefusalEvent = { id: string; createdAt: string; data: unknown };
const refusalData = (event: RefusalEvent) => event.data as RefusalData;

const refusalColumns: DataColumn<RefusalEvent>[] = [
  { id: 'time', header: 'Time', className: 'cell-time', cell: (event) => <LocalTime iso={event.createdAt} /> },
  { id: 'reason', header: 'Reason', className: 'cell-wrap', cell: (event) => <ReasonCell reason={refusalData(event).reason} /> },
  { id: 'attestor', header: 'Attestor', cell: (event) => refusalData(event).attestor ?? '—' },
  { id: 'role', header: 'Role', cell: (event) => refusalData(event).role ?? '—' },
  {
    id: 'caller',
    header: 'Caller',
    headerProps: { title: "The caller's address; for a join relayed by the gateway, the address the gateway saw" },
    cell: (event) => {
      const address = refusalData(event).clientAddress;
      return address ? <code>{address}</code> : <span className="muted">not recorded</span>;
    },
  },
  { id: 'csr', header: 'CSR hash', cell: (event) => <ShortHash value={refusalData(event).csrSha256} label="CSR hash" /> },
  { id: 'key', header: 'Hardware key', cell: (event) => <ShortHash value={refusalData(event).hardwareKey} label="hardware key" /> },
  {
    id: 'suppressed',
    header: 'Suppressed',
    headerProps: { 'aria-describedby': 'suppressed-meaning' },
    className: 'cell-number',
    title: () => 'Refusals of this reason dropped by the rate limit since the previous event',
    cell: (event) => refusalData(event).suppressed ?? 0,
  },
  {
    id: 'token',
    header: 'Token and binding',
    cell: (event) => {
      const data = refusalData(event);
      return (
        <>
          {data.tokenId ? <code>{data.tokenId}</code> : <span className="muted">unverified</span>}
          {data.expectField && (
            <span className="cell-sub">
              did not match expect.{data.expectField === 'boundMac' ? 'mac (the bound MAC)' : data.expectField}
            </span>
          )}
        </>
      );
    },
  },
];

function ReasonCell({ reason }: { reason: string | undefined }) {
  const explained = explainRefusal(reason ?? '');
  return (
    <>
      <code>{reason ?? 'unknown'}</code>
      <span className="reason-meaning" title={explained.meaning}>
        {explained.meaning}
      </span>
      <span className="reason-action" title={`What to do: ${explained.action}`}>
        What to do: {explained.action}
      </span>
    </>
  );
}

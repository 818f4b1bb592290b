'use client';

import { useInfiniteQuery } from '@tanstack/react-query';
import { useId, useMemo } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
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
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Reason</th>
                    <th scope="col">Attestor</th>
                    <th scope="col">Role</th>
                    <th scope="col" title="The caller's address; for a join relayed by the gateway, the address the gateway saw">
                      Caller
                    </th>
                    <th scope="col">CSR hash</th>
                    <th scope="col">Hardware key</th>
                    <th scope="col" aria-describedby="suppressed-meaning">
                      Suppressed
                    </th>
                    <th scope="col">Token and binding</th>
                  </tr>
                </thead>
                <tbody>
                  {items.map((event) => {
                    const data = event.data as RefusalData;
                    const explained = explainRefusal(data.reason ?? '');
                    return (
                      <tr key={event.id}>
                        <td className="cell-time">
                          <LocalTime iso={event.createdAt} />
                        </td>
                        <td className="cell-wrap">
                          <code>{data.reason ?? 'unknown'}</code>
                          <span className="reason-meaning" title={explained.meaning}>
                            {explained.meaning}
                          </span>
                          <span className="reason-action" title={`What to do: ${explained.action}`}>
                            What to do: {explained.action}
                          </span>
                        </td>
                        <td>{data.attestor ?? '—'}</td>
                        <td>{data.role ?? '—'}</td>
                        <td>{data.clientAddress ? <code>{data.clientAddress}</code> : <span className="muted">not recorded</span>}</td>
                        <td>
                          <ShortHash value={data.csrSha256} label="CSR hash" />
                        </td>
                        <td>
                          <ShortHash value={data.hardwareKey} label="hardware key" />
                        </td>
                        <td className="cell-number" title="Refusals of this reason dropped by the rate limit since the previous event">
                          {data.suppressed ?? 0}
                        </td>
                        <td>
                          {data.tokenId ? <code>{data.tokenId}</code> : <span className="muted">unverified</span>}
                          {data.expectField && (
                            <span className="cell-sub">
                              did not match expect.{data.expectField === 'boundMac' ? 'mac (the bound MAC)' : data.expectField}
                            </span>
                          )}
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
            <LoadMore query={refusals} label="Load older refusals" />
          </section>
        )}
      </QueryStates>
    </>
  );
}

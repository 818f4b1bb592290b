'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { LoadingRows, QueryError } from '@/components/ui/query-state';
import { overviewRange } from '@/lib/console-page-inputs';
import type { Tenant } from '@/lib/api-types';
import { useLiveRefresh } from '@/lib/live';
import { formatSeconds, joinSeries, renewalSeries, type Overview, type OverviewRange, type StackMode } from '@/lib/overview-series';
import { withTenant } from '@/lib/tenant-url';
import { useTRPC } from '@/lib/trpc';
import { useUrlParams } from '@/lib/url-state';
import { ConnectedPanel } from './connected-panel';
import { StackedBars } from './stacked-bars';
import { Segmented } from './segmented';
import './overview.css';

const RANGES: Array<{ value: OverviewRange; label: string }> = [
  { value: '24h', label: 'Last 24 hours' },
  { value: '7d', label: 'Last 7 days' },
];
const STACKS: Array<{ value: StackMode; label: string }> = [
  { value: 'outcome', label: 'Outcome' },
  { value: 'attestor', label: 'Attestor' },
  { value: 'reason', label: 'Refusal reason' },
];

export function OverviewView() {
  return <TenantGate>{(tenant) => <TenantOverview key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/** The tenant's landing page: what joined, what waits, what renews and what is about to expire. */
function TenantOverview({ tenant }: { tenant: Tenant }) {
  const trpc = useTRPC();
  const [params, setParams] = useUrlParams(['range', 'stack'] as const);
  const range = overviewRange(params.range);
  const stack = STACKS.find((s) => s.value === params.stack)?.value ?? 'outcome';
  const overview = useQuery(trpc.overview.get.queryOptions({ tenantId: tenant.id, range }));
  // Joins, refusals, decisions and renewals all write events: the page re-reads when any instance announces one.
  useLiveRefresh([trpc.overview.pathFilter()], { eventsOf: tenant.id });
  const link = (path: string) => withTenant(path, tenant.id);

  return (
    <div className="overview">
      <PageHeader
        title="Overview"
        description={
          <>
            Joins, the queue, renewals and certificates of tenant <strong>{tenant.name}</strong>, from the control plane&rsquo;s database.
          </>
        }
        actions={
          <Segmented
            legend="Period"
            name="overview-range"
            options={RANGES}
            value={range}
            onChange={(value) => setParams({ range: value === '24h' ? null : value })}
          />
        }
      />
      {overview.isPending ? (
        <LoadingRows label="Loading the overview…" />
      ) : overview.isError ? (
        <QueryError error={overview.error} what="the overview" onRetry={() => void overview.refetch()} />
      ) : (
        <div className="overview-grid">
          <section className="panel overview-panel overview-wide" aria-labelledby="ov-joins">
            <header className="panel-header overview-panel-header">
              <h2 id="ov-joins">Joins per hour</h2>
              <Segmented
                legend="Stack by"
                name="overview-stack"
                options={STACKS}
                value={stack}
                onChange={(value) => setParams({ stack: value === 'outcome' ? null : value })}
              />
            </header>
            <div className="overview-body">
              <StackedBars
                title={
                  stack === 'reason'
                    ? 'Refused joins by reason'
                    : stack === 'attestor'
                      ? 'Admitted and pending joins by attestor'
                      : 'Joins by outcome'
                }
                unit="joins"
                hours={overview.data.hours}
                range={range}
                series={joinSeries(overview.data, stack, (reason) =>
                  link(`/refused-joins?${reason ? `reason=${encodeURIComponent(reason)}&` : ''}range=${range}`),
                )}
              />
            </div>
          </section>
          <QueuePanel data={overview.data} link={link} />
          <DecisionsPanel data={overview.data} link={link} />
          <section className="panel overview-panel overview-wide" aria-labelledby="ov-renewals">
            <header className="panel-header overview-panel-header">
              <h2 id="ov-renewals">Renewals per hour</h2>
              <Link href={link(`/events?type=security.renew.refused`)}>Refused renewals</Link>
            </header>
            <div className="overview-body">
              <StackedBars
                title="Renewals"
                unit="renewals"
                hours={overview.data.hours}
                range={range}
                series={renewalSeries(overview.data)}
              />
            </div>
          </section>
          <ExpiringPanel data={overview.data} link={link} />
          <ConnectedPanel data={overview.data} link={link} />
        </div>
      )}
    </div>
  );
}

type PanelProps = { data: Overview; link: (path: string) => string };

function QueuePanel({ data, link }: PanelProps) {
  return (
    <section className="panel overview-panel" aria-labelledby="ov-queue">
      <header className="panel-header overview-panel-header">
        <h2 id="ov-queue">Join request queue</h2>
      </header>
      {data.queue.length === 0 ? (
        <p className="overview-body muted">This tenant has no sites.</p>
      ) : (
        <div className="table-scroll">
          <table className="table overview-table">
            <thead>
              <tr>
                <th scope="col">Site</th>
                <th scope="col" className="num">
                  Pending
                </th>
                <th scope="col">Oldest waits</th>
              </tr>
            </thead>
            <tbody>
              {data.queue.map((q) => (
                <tr key={q.siteId}>
                  <th scope="row">{q.poolId ? <Link href={link(`/join-requests?pool=${q.poolId}`)}>{q.siteName}</Link> : q.siteName}</th>
                  <td className="num">
                    <QueueBar value={q.pending} max={Math.max(...data.queue.map((x) => x.pending), 1)} />
                    {q.pending}
                  </td>
                  <td className={q.oldestPendingSeconds !== null && q.oldestPendingSeconds > 3600 ? 'overview-late' : undefined}>
                    {q.oldestPendingSeconds === null ? 'nothing waits' : formatSeconds(q.oldestPendingSeconds)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** A bar proportional to the value, beside the number (which is what assistive technology reads). */
function QueueBar({ value, max }: { value: number; max: number }) {
  return <span className="overview-bar" aria-hidden="true" style={{ width: `${Math.round((value / max) * 100)}%` }} />;
}

function DecisionsPanel({ data, link }: PanelProps) {
  return (
    <section className="panel overview-panel" aria-labelledby="ov-decisions">
      <header className="panel-header overview-panel-header">
        <h2 id="ov-decisions">Time to decision, last 7 days</h2>
      </header>
      {data.decisions.length === 0 ? (
        <p className="overview-body muted">No join request was decided in the last 7 days.</p>
      ) : (
        <div className="table-scroll">
          <table className="table overview-table">
            <thead>
              <tr>
                <th scope="col">Site</th>
                <th scope="col" className="num">
                  Decided
                </th>
                <th scope="col">Median</th>
                <th scope="col">90th percentile</th>
              </tr>
            </thead>
            <tbody>
              {data.decisions.map((d) => (
                <tr key={d.siteId}>
                  <th scope="row">
                    {d.poolId ? <Link href={link(`/join-requests?pool=${d.poolId}&state=all`)}>{d.siteName}</Link> : d.siteName}
                  </th>
                  <td className="num">{d.decided}</td>
                  <td>{formatSeconds(d.medianSeconds)}</td>
                  <td>{formatSeconds(d.p90Seconds)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function ExpiringPanel({ data, link }: PanelProps) {
  return (
    <section className="panel overview-panel" aria-labelledby="ov-expiring">
      <header className="panel-header overview-panel-header">
        <h2 id="ov-expiring">Certificates expiring</h2>
      </header>
      {data.expiring.length === 0 ? (
        <p className="overview-body muted">No node of this tenant holds a valid certificate.</p>
      ) : (
        <div className="table-scroll">
          <table className="table overview-table">
            <thead>
              <tr>
                <th scope="col">Pool</th>
                <th scope="col" className="num">
                  Within 1 h
                </th>
                <th scope="col" className="num">
                  6 h
                </th>
                <th scope="col" className="num">
                  24 h
                </th>
              </tr>
            </thead>
            <tbody>
              {data.expiring.map((e) => (
                <tr key={e.poolId}>
                  <th scope="row">
                    <Link href={link(`/nodes?pool=${e.poolId}`)}>{e.poolName}</Link>
                  </th>
                  <td className={`num${e.within1h ? ' overview-late' : ''}`}>{e.within1h}</td>
                  <td className="num">{e.within6h}</td>
                  <td className="num">{e.within24h}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

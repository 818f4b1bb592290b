'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { LoadingRows, QueryError } from '@/components/ui/query-state';
import { overviewRange } from '@/lib/console-page-inputs';
import type { Tenant } from '@/lib/api-types';
import { useLiveRefresh } from '@/lib/live';
import { joinSeries, renewalSeries, type OverviewRange, type StackMode } from '@/lib/overview-series';
import { withTenant } from '@/lib/tenant-url';
import { useTRPC } from '@/lib/trpc';
import { useUrlParams } from '@/lib/url-state';
import { ConnectedPanel, DecisionsPanel, ExpiringPanel, QueuePanel } from './table-panels';
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

'use client';

import { keepPreviousData, useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { useId, useMemo } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { LoadMore, QueryStates } from '@/components/ui/query-state';
import { auditListInput, nextListPage } from '@/lib/console-page-inputs';
import type { Tenant } from '@/lib/api-types';
import { useLiveRefresh } from '@/lib/live';
import { useTRPC } from '@/lib/trpc';
import { useUrlParams } from '@/lib/url-state';
import { AUDIT_RANGES, auditExportHref, rangeBounds } from './audit-range';
import { AuditTable } from './audit-table';
import './audit.css';

/** The most rows one export holds (server/events/export-audit.ts). */
const EXPORT_MAX_ROWS = '100,000';

export function AuditView() {
  return <TenantGate>{(tenant) => <TenantAudit key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/**
 * Who did what to which resource, when and why. Filters (in the URL): a time range, one action and one actor
 * (facets counted over the range), each applied by the server; the export downloads what the filters show.
 */
function TenantAudit({ tenant }: { tenant: Tenant }) {
  const trpc = useTRPC();
  const [params, setParams] = useUrlParams(['action', 'actor', 'range', 'from', 'to'] as const);
  const ids = { action: useId(), actor: useId(), range: useId(), from: useId(), to: useId() };
  // Fixed when the range is chosen, so the query key (and its cache) does not change on every render.
  const bounds = useMemo(
    () => rangeBounds({ range: params.range, from: params.from, to: params.to }, Date.now()),
    [params.range, params.from, params.to],
  );
  const filters = {
    ...(params.action ? { actionEquals: params.action } : {}),
    ...(params.actor ? { actorEquals: params.actor } : {}),
    ...bounds,
  };
  const audit = useInfiniteQuery(
    trpc.audit.list.infiniteQueryOptions(auditListInput(tenant.id, params, bounds), {
      getNextPageParam: nextListPage,
      placeholderData: keepPreviousData,
    }),
  );
  const facets = useQuery(trpc.audit.facets.queryOptions({ tenantId: tenant.id, ...bounds }, { placeholderData: keepPreviousData }));
  // The facets are read when the range changes, not on every change the server announces (they count rows).
  useLiveRefresh(trpc.audit.list.pathFilter(), { eventsOf: tenant.id });
  const items = audit.data?.pages.flatMap((page) => page.items) ?? [];
  // A value in the URL that the range no longer counts stays selectable (with no count).
  const actions = facets.data?.actions ?? [];
  const actors = facets.data?.actors ?? [];
  const actionOptions =
    params.action && !actions.some((a) => a.value === params.action) ? [...actions, { value: params.action, count: 0 }] : actions;
  const actorOptions =
    params.actor && !actors.some((a) => a.value === params.actor) ? [...actors, { value: params.actor, name: null, count: 0 }] : actors;
  const isFiltered = Boolean(params.action || params.actor || bounds.since || bounds.until);

  return (
    <>
      <PageHeader
        title="Audit"
        description={
          <>
            Every change made in tenant <strong>{tenant.name}</strong>, by whom, newest first.
          </>
        }
        actions={
          <a
            className="btn audit-export"
            href={auditExportHref(tenant.id, filters)}
            download
            title={`The entries these filters show, as CSV (at most ${EXPORT_MAX_ROWS}, newest first)`}
          >
            Export CSV
          </a>
        }
      />
      <div role="search" aria-label="Filter the audit log" className="filters audit-filters">
        <div className="field">
          <label htmlFor={ids.range} className="field-label">
            Time range
          </label>
          <select
            id={ids.range}
            value={params.range === 'custom' || AUDIT_RANGES.some((r) => r.value === params.range) ? params.range! : ''}
            onChange={(event) =>
              setParams({ range: event.target.value || null, ...(event.target.value === 'custom' ? {} : { from: null, to: null }) })
            }
          >
            <option value="">All time</option>
            {AUDIT_RANGES.map((r) => (
              <option key={r.value} value={r.value}>
                {r.label}
              </option>
            ))}
            <option value="custom">Between…</option>
          </select>
        </div>
        {params.range === 'custom' && (
          <>
            <div className="field">
              <label htmlFor={ids.from} className="field-label">
                From
              </label>
              <input
                id={ids.from}
                type="datetime-local"
                value={params.from ?? ''}
                onChange={(e) => setParams({ from: e.target.value || null })}
              />
            </div>
            <div className="field">
              <label htmlFor={ids.to} className="field-label">
                To
              </label>
              <input
                id={ids.to}
                type="datetime-local"
                value={params.to ?? ''}
                onChange={(e) => setParams({ to: e.target.value || null })}
              />
            </div>
          </>
        )}
        <div className="field">
          <label htmlFor={ids.action} className="field-label">
            Action
          </label>
          <select id={ids.action} value={params.action ?? ''} onChange={(event) => setParams({ action: event.target.value || null })}>
            <option value="">All actions</option>
            {actionOptions.map((a) => (
              <option key={a.value} value={a.value}>
                {a.count ? `${a.value} (${a.count})` : a.value}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={ids.actor} className="field-label">
            Actor
          </label>
          <select id={ids.actor} value={params.actor ?? ''} onChange={(event) => setParams({ actor: event.target.value || null })}>
            <option value="">Everyone</option>
            {actorOptions.map((a) => (
              <option key={a.value} value={a.value}>
                {`${a.name ?? a.value}${a.count ? ` (${a.count})` : ''}`}
              </option>
            ))}
          </select>
        </div>
      </div>
      <QueryStates
        query={audit}
        items={items}
        loading="Loading the audit log…"
        what="the audit log"
        empty={isFiltered ? 'No audit entries match these filters.' : 'Nothing was changed in this tenant yet.'}
      >
        {() => (
          <section className="panel" aria-label="Audit log" aria-busy={audit.isPlaceholderData}>
            <div className={`table-scroll${audit.isPlaceholderData ? ' is-stale' : ''}`}>
              <AuditTable items={items} tenantId={tenant.id} />
            </div>
            <LoadMore query={audit} label="Load older entries" />
          </section>
        )}
      </QueryStates>
    </>
  );
}

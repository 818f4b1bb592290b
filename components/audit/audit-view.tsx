'use client';

import { keepPreviousData, useInfiniteQuery } from '@tanstack/react-query';
import { useEffect, useId, useState } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { EventDetails } from '@/components/events/event-details';
import { LoadMore, QueryStates } from '@/components/ui/query-state';
import { LocalTime } from '@/components/ui/time';
import { auditListInput, nextListPage } from '@/lib/console-page-inputs';
import type { Tenant } from '@/lib/api-types';
import { useLiveRefresh } from '@/lib/live';
import { useTRPC } from '@/lib/trpc';
import { useUrlParams } from '@/lib/url-state';

export function AuditView() {
  return <TenantGate>{(tenant) => <TenantAudit key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/** A search box whose value reaches the URL (and the query) once typing pauses. */
function useSearchParamInput(value: string | null, commit: (value: string | null) => void): [string, (text: string) => void] {
  const [text, setText] = useState(value ?? '');
  useEffect(() => {
    if (text === (value ?? '')) return;
    const timer = setTimeout(() => commit(text.trim() || null), 300);
    return () => clearTimeout(timer);
  }, [text, value, commit]);
  return [text, setText];
}

/** Who did what to which resource, when and why; searchable by actor and action. */
function TenantAudit({ tenant }: { tenant: Tenant }) {
  const trpc = useTRPC();
  const [params, setParams] = useUrlParams(['actor', 'action'] as const);
  const [actorText, setActorText] = useSearchParamInput(params.actor, (actor) => setParams({ actor }));
  const [actionText, setActionText] = useSearchParamInput(params.action, (action) => setParams({ action }));
  const actorId = useId();
  const actionId = useId();
  const audit = useInfiniteQuery(
    trpc.audit.list.infiniteQueryOptions(auditListInput(tenant.id, params), {
      getNextPageParam: nextListPage,
      placeholderData: keepPreviousData,
    }),
  );
  useLiveRefresh(trpc.audit.list.pathFilter(), { eventsOf: tenant.id });
  const items = audit.data?.pages.flatMap((page) => page.items) ?? [];

  return (
    <>
      <PageHeader
        title="Audit"
        description={
          <>
            Every change made in tenant <strong>{tenant.name}</strong>, by whom, newest first.
          </>
        }
      />
      <div role="search" aria-label="Search the audit log" className="filters">
        <div className="field">
          <label htmlFor={actorId} className="field-label">
            Actor
          </label>
          <input
            id={actorId}
            type="search"
            placeholder="email or operator:op_…"
            value={actorText}
            onChange={(event) => setActorText(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor={actionId} className="field-label">
            Action
          </label>
          <input
            id={actionId}
            type="search"
            placeholder="join-token.revoked"
            value={actionText}
            onChange={(event) => setActionText(event.target.value)}
          />
        </div>
      </div>
      <QueryStates
        query={audit}
        items={items}
        loading="Loading the audit log…"
        what="the audit log"
        empty={params.actor || params.action ? 'No audit entries match this search.' : 'Nothing was changed in this tenant yet.'}
      >
        {() => (
          <section className="panel" aria-label="Audit log" aria-busy={audit.isPlaceholderData}>
            <div className={`table-scroll${audit.isPlaceholderData ? ' is-stale' : ''}`}>
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Actor</th>
                    <th scope="col">Action</th>
                    <th scope="col">Resource</th>
                    <th scope="col">Reason</th>
                    <th scope="col">Details</th>
                  </tr>
                </thead>
                <tbody>
                  {items.map((entry) => (
                    <tr key={entry.id}>
                      <td className="cell-time">
                        <LocalTime iso={entry.createdAt} />
                      </td>
                      <td title={entry.actor}>
                        {entry.actorName ?? <code>{entry.actor}</code>}
                        {entry.actorEmail && entry.actorEmail !== entry.actorName && <span className="cell-sub">{entry.actorEmail}</span>}
                      </td>
                      <td>
                        <code>{entry.action}</code>
                      </td>
                      <td>
                        <code>{entry.resource}</code>
                      </td>
                      <td className="cell-wrap">{entry.reason ?? <span className="muted">none given</span>}</td>
                      <td className="cell-wrap">
                        <EventDetails data={entry.data} tenantId={tenant.id} actorNames={entry.actorNames} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <LoadMore query={audit} label="Load older entries" />
          </section>
        )}
      </QueryStates>
    </>
  );
}

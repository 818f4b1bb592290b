'use client';

import { useInfiniteQuery } from '@tanstack/react-query';
import { useId } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { LoadMore, QueryStates } from '@/components/ui/query-state';
import { eventsListInput, nextListPage } from '@/lib/console-page-inputs';
import type { Tenant } from '@/lib/api-types';
import { useLiveRefresh } from '@/lib/live';
import { useTRPC } from '@/lib/trpc';
import { useUrlParams } from '@/lib/url-state';
import { EventsTable } from './events-table';

/** The event types the server publishes, for the type filter (the CLI's `events list --type`). */
export const EVENT_TYPES = [
  'node.joined',
  'node.adopted',
  'node.connected',
  'node.disconnected',
  'node.acceptance.started',
  'node.acceptance.passed',
  'node.acceptance.failed',
  'node.reclaimed',
  'node.join-request.auto-admitted',
  'node.join-request.created',
  'node.join-request.approval-recorded',
  'node.join-request.expired',
  'node.cordoned',
  'node.uncordoned',
  'node.identity-revoked',
  'node.labels-changed',
  'node.deleted',
  'node.stale.cordoned',
  'node.stale.retired',
  'node.command.enqueued',
  'node.command.finished',
  'security.join.refused',
  'security.session.refused',
  'security.site-agent.refused',
  'security.command.refused',
  'security.command.result-refused',
  'security.renew.refused',
  'security.join-request.approved',
  'security.join-request.rejected',
  'security.join-token.created',
  'security.join-token.revoked',
  'security.certificate-revoked',
  'security.pki.rotation.prepared',
  'security.pki.rotation.activated',
  'security.pki.rotation.retired',
  'pool.created',
  'pool.archived',
  'site.created',
  'site.archived',
  'operator.invited',
  'operator.invitation-revoked',
  'operator.joined',
  'operator.role-changed',
  'operator.removed',
  'webhook.subscription.created',
  'webhook.subscription.updated',
  'webhook.subscription.secret-rotated',
  'webhook.subscription.deleted',
  'webhook.subscription.disabled',
] as const;

export function EventsView() {
  return <TenantGate>{(tenant) => <TenantEvents key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/** The tenant's events, newest first, a page at a time, of one type when `?type=` names it. */
function TenantEvents({ tenant }: { tenant: Tenant }) {
  const trpc = useTRPC();
  const [params, setParams] = useUrlParams(['type'] as const);
  const type = params.type ?? '';
  const filterId = useId();
  const events = useInfiniteQuery(
    trpc.events.list.infiniteQueryOptions(eventsListInput(tenant.id, params), { getNextPageParam: nextListPage }),
  );
  useLiveRefresh(trpc.events.list.pathFilter(), { eventsOf: tenant.id });
  const items = events.data?.pages.flatMap((page) => page.items) ?? [];
  const types = type && !(EVENT_TYPES as readonly string[]).includes(type) ? [...EVENT_TYPES, type] : EVENT_TYPES;
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
      <div className="filters">
        <div className="field">
          <label htmlFor={filterId} className="field-label">
            Type
          </label>
          <select id={filterId} value={type} onChange={(event) => setParams({ type: event.target.value || null })}>
            <option value="">All types</option>
            {types.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </div>
      </div>
      <QueryStates
        query={events}
        items={items}
        loading="Loading events…"
        what="events"
        empty={type ? `No ${type} events in this tenant.` : 'No events in this tenant yet.'}
      >
        {() => (
          <section className="panel" aria-label="Events">
            <EventsTable events={items} tenantId={tenant.id} />
            <LoadMore query={events} label="Load older events" />
          </section>
        )}
      </QueryStates>
    </>
  );
}

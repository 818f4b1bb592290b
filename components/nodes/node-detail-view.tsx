'use client';

import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { EventsTable } from '@/components/events/events-table';
import { HardwareKeyBadge } from '@/components/join-requests/request-badges';
import { LoadingRows, LoadMore, QueryError } from '@/components/ui/query-state';
import { LocalTime } from '@/components/ui/time';
import { nextListPage, nodeEventsInput } from '@/lib/console-page-inputs';
import type { Tenant } from '@/lib/api-types';
import { useLiveRefresh } from '@/lib/live';
import { withTenant } from '@/lib/tenant-url';
import { useTRPC } from '@/lib/trpc';
import { useNowSince } from '@/lib/use-now';
import { CertificateHistory } from './certificate-history';
import { NodeAdmission } from './node-admission';
import { NodeInventory } from './node-inventory';
import { NodeActions } from './node-actions';
import { NodeLabelsEditor } from './node-labels-editor';
import { can } from '@/lib/can';
import { SessionDetails } from './session-state';
import { NodeCommands } from './node-commands';

export function NodeDetailView({ nodeId }: { nodeId: string }) {
  return <TenantGate>{(tenant) => <TenantNode key={tenant.id} tenant={tenant} nodeId={nodeId} />}</TenantGate>;
}

/** One node: identity, certificate history, conditions, lifecycle actions and its events. */
function TenantNode({ tenant, nodeId }: { tenant: Tenant; nodeId: string }) {
  const trpc = useTRPC();
  const node = useQuery(trpc.nodes.get.queryOptions({ tenantId: tenant.id, nodeId }));
  const events = useInfiniteQuery(
    trpc.events.list.infiniteQueryOptions(nodeEventsInput(tenant.id, nodeId), { getNextPageParam: nextListPage }),
  );
  useLiveRefresh([trpc.nodes.get.pathFilter(), trpc.events.list.pathFilter()], { eventsOf: tenant.id });
  const now = useNowSince(node.dataUpdatedAt);
  const back = (
    <Link href={withTenant(node.data?.poolId ? `/nodes?pool=${node.data.poolId}` : '/nodes', tenant.id)} className="btn btn-small">
      All nodes
    </Link>
  );

  if (node.isPending) return <LoadingRows label="Loading node…" />;
  if (node.isError)
    return (
      <>
        <PageHeader title={`Node ${nodeId}`} actions={back} />
        <QueryError error={node.error} what={`node ${nodeId}`} onRetry={() => void node.refetch()} />
      </>
    );
  const n = node.data;
  const cert = n.certificate;
  // A ramdisk's row never claims the machine's key (its installed OS joins with it): its certificate says ramdisk.
  const isRamdisk = n.certificateRole === 'ramdisk' || n.attestor === 'discovery';
  const eventItems = events.data?.pages.flatMap((page) => page.items) ?? [];
  return (
    <>
      <PageHeader
        title={n.hostname ?? `Node ${n.id}`}
        description={
          <>
            <code data-testid="node-id">{n.id}</code> <span className={`status status-${n.state}`}>{n.state}</span>
            {n.cordoned && <span className="badge badge-warn">cordoned</span>} in pool{' '}
            {n.poolId ? (
              <Link href={withTenant(`/nodes?pool=${n.poolId}`, tenant.id)} title={n.poolId}>
                {n.poolName ?? n.poolId}
              </Link>
            ) : (
              'none'
            )}
            , site{' '}
            <Link href={withTenant(`/nodes?site=${n.siteId}`, tenant.id)} title={n.siteId}>
              {n.siteName ?? n.siteId}
            </Link>
            .
          </>
        }
        actions={back}
      />
      <section className="panel" aria-labelledby="node-identity">
        <header className="panel-header">
          <h2 id="node-identity">Identity</h2>
          <NodeActions node={n} tenant={tenant} />
        </header>
        <dl className="details panel-body">
          <dt>Role</dt>
          <dd data-testid="node-role">
            {n.certificateRole ?? n.role}
            {n.certificateRole && n.certificateRole !== n.role && (
              <span className="cell-sub">as its certificate says (joined with a {n.role} token)</span>
            )}
          </dd>
          <dt>Trust</dt>
          <dd data-testid="node-key-trust">
            {n.trust}, <HardwareKeyBadge hasKey={n.hasHardwareKey} isTrusted={n.hardwareKeyTrusted} isRamdisk={isRamdisk} />
            {isRamdisk && n.admission && (
              <span className="cell-sub">
                the machine&apos;s own key is {n.admission.hardwareKeyTrusted ? 'trusted' : 'not trusted'}, as its join request recorded
              </span>
            )}
          </dd>
          <dt>Node key</dt>
          <dd className="node-key">{nodeKeyWording(n.nodeKey)}</dd>
          <dt>Identity generation</dt>
          <dd>{n.identityGeneration}</dd>
          <dt>Joined with</dt>
          <dd>
            {n.attestor}
            {n.joinTokenId && (
              <>
                {' '}
                token <code>{n.joinTokenId}</code>
              </>
            )}
            {n.joinRequestId && (
              <span className="cell-sub">
                admitted by join request{' '}
                <Link href={withTenant(`/join-requests?pool=${n.poolId ?? ''}&state=all&request=${n.joinRequestId}`, tenant.id)}>
                  {n.joinRequestId}
                </Link>
                {n.joinRequestDecidedBy && <>, decided by {n.joinRequestDecidedBy}</>}
              </span>
            )}
          </dd>
          <dt>Joined at</dt>
          <dd>
            <LocalTime iso={n.createdAt} />
          </dd>
          <dt>Updated</dt>
          <dd>
            <LocalTime iso={n.updatedAt} />
          </dd>
          <dt>Conditions</dt>
          <dd>
            {n.conditions.length ? (
              <ul className="plain-list">
                {n.conditions.map((c) => (
                  <li key={c.type}>
                    <strong>{c.type}</strong>: {c.message}
                    {c.checks && c.checks.length > 0 && (
                      <ul className="plain-list" aria-label="Acceptance checks">
                        {c.checks.map((check) => (
                          <li key={check.check}>
                            <span className={`status status-${check.passed ? 'passed' : 'failed'}`}>
                              {check.passed ? 'passed' : 'failed'}
                            </span>{' '}
                            <code>{check.check}</code>: {check.message}
                          </li>
                        ))}
                      </ul>
                    )}
                  </li>
                ))}
              </ul>
            ) : (
              <span className="muted">none</span>
            )}
          </dd>
        </dl>
      </section>
      <section className="panel" aria-labelledby="node-admission">
        <header className="panel-header">
          <h2 id="node-admission">Admission</h2>
        </header>
        <NodeAdmission node={n} tenantId={tenant.id} />
      </section>
      <section className="panel" aria-labelledby="node-labels">
        <header className="panel-header">
          <h2 id="node-labels">Labels</h2>
        </header>
        <div className="panel-body">
          <NodeLabelsEditor
            tenantId={tenant.id}
            nodeId={n.id}
            labels={n.labels}
            editable={can(tenant, 'compute:nodes:manage') && n.state !== 'retired'}
          />
        </div>
      </section>
      <section className="panel" aria-labelledby="node-inventory">
        <header className="panel-header">
          <h2 id="node-inventory">Hardware inventory</h2>
          <span className="muted">as the machine claimed at its last join</span>
        </header>
        <NodeInventory claims={n.claims} />
      </section>
      <section className="panel" aria-labelledby="node-session">
        <header className="panel-header">
          <h2 id="node-session">Session</h2>
        </header>
        <SessionDetails session={n.session} now={now} trust={{ version: n.trustVersion, at: n.trustVersionAt }} />
      </section>
      <NodeCommands tenant={tenant} nodeId={n.id} retired={n.state === 'retired'} />
      <section className="panel" aria-labelledby="node-certificates">
        <header className="panel-header">
          <h2 id="node-certificates">Certificates</h2>
        </header>
        {!cert && <p className="panel-body">No live certificate: the node must join again.</p>}
        {n.certificates.length > 0 ? (
          <CertificateHistory certificates={n.certificates} total={n.certificateCount} now={now} />
        ) : (
          <p className="panel-empty">No certificate was ever issued to this node.</p>
        )}
      </section>
      <section className="panel" aria-labelledby="node-events">
        <header className="panel-header">
          <h2 id="node-events">Events</h2>
        </header>
        {events.isPending ? (
          <div className="panel-empty">
            <LoadingRows label="Loading events…" />
          </div>
        ) : events.isError ? (
          <QueryError error={events.error} what="events" onRetry={() => void events.refetch()} />
        ) : eventItems.length === 0 ? (
          <p className="panel-empty">No events name this node.</p>
        ) : (
          <EventsTable events={eventItems} tenantId={tenant.id} />
        )}
        <LoadMore query={events} label="Load more events" />
      </section>
    </>
  );
}

/** What the (last) join proved about where the node key lives. */
function nodeKeyWording(nodeKey: 'tpm' | 'unattested' | null): string {
  if (nodeKey === 'tpm') return 'in the machine’s TPM, attested (the TPM’s attestation key certified it)';
  if (nodeKey === 'unattested')
    return 'unattested: nothing proved to the control plane where the key lives (bcd keeps it in the TPM when it can open one)';
  return 'not recorded';
}

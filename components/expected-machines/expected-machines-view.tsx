'use client';

import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { QueryStates } from '@/components/ui/query-state';
import { LocalTime } from '@/components/ui/time';
import type { Tenant } from '@/lib/api-types';
import { can } from '@/lib/can';
import { useLiveRefresh } from '@/lib/live';
import { useTRPC } from '@/lib/trpc';
import { useUrlParams } from '@/lib/url-state';
import { ImportPanel } from './import-panel';
import { TableScroll } from '@/components/ui/table-scroll';

export function ExpectedMachinesView() {
  return <TenantGate>{(tenant) => <TenantExpectedMachines key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/** A site's expected machines (`?site=`): import a list, see who has not arrived, who arrived, and arrivals nobody listed. */
function TenantExpectedMachines({ tenant }: { tenant: Tenant }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [params, setParams] = useUrlParams(['site'] as const);
  const sites = useQuery(trpc.sites.list.queryOptions({ tenantId: tenant.id }));
  const pools = useQuery(trpc.pools.list.queryOptions({ tenantId: tenant.id }));
  const siteId = params.site ?? sites.data?.items[0]?.id ?? null;
  const scope = { tenantId: tenant.id, siteId: siteId ?? 'site_0' };
  const waiting = useQuery({ ...trpc.expectedMachines.list.queryOptions({ ...scope, state: 'waiting' }), enabled: siteId !== null });
  const arrived = useQuery({ ...trpc.expectedMachines.list.queryOptions({ ...scope, state: 'arrived' }), enabled: siteId !== null });
  const unmatched = useQuery({ ...trpc.expectedMachines.unmatched.queryOptions(scope), enabled: siteId !== null });
  // An arrival is a join: re-read when the site's queue changes.
  useLiveRefresh([trpc.expectedMachines.list.pathFilter(), trpc.expectedMachines.unmatched.pathFilter()], { eventsOf: tenant.id });
  const [isImporting, setImporting] = useState(false);
  const poolNames = new Map(pools.data?.items.map((p) => [p.id, p.name]));
  const refresh = () => void queryClient.invalidateQueries(trpc.expectedMachines.list.pathFilter());

  return (
    <>
      <PageHeader
        title="Expected machines"
        description={
          <>
            Machines a site expects: a PXE machine whose vouched MAC (or, with a trusted hardware key, serial or product UUID) is listed
            joins its pool at once. Tenant <strong>{tenant.name}</strong>.
          </>
        }
        actions={
          <>
            <div className="picker">
              <label htmlFor="expected-site" className="picker-label">
                Site
              </label>
              <select id="expected-site" value={siteId ?? ''} onChange={(event) => setParams({ site: event.target.value || null })}>
                {sites.data?.items.map((site) => (
                  <option key={site.id} value={site.id}>
                    {site.name}
                  </option>
                ))}
              </select>
            </div>
            {can(tenant, 'compute:sites:manage') && (
              <button type="button" className="btn btn-primary" disabled={!siteId} onClick={() => setImporting(true)}>
                Import
              </button>
            )}
          </>
        }
      />
      {siteId && isImporting && (
        <ImportPanel
          scope={{ tenantId: tenant.id, siteId }}
          pools={(pools.data?.items ?? []).filter((p) => p.siteId === siteId && p.agent === 'bcd' && !p.archivedAt)}
          onImported={refresh}
          onClose={() => setImporting(false)}
        />
      )}

      <h2 className="detail-heading">Not arrived yet{waiting.data ? ` (${waiting.data.total})` : ''}</h2>
      <QueryStates
        query={waiting}
        items={waiting.data?.items ?? []}
        loading="Loading expected machines…"
        what="expected machines"
        empty="No expected machine is waiting in this site."
      >
        {(items) => (
          <section className="panel" aria-label="Not arrived yet">
            <TableScroll label="Machines not arrived yet">
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">Serial</th>
                    <th scope="col">Product UUID</th>
                    <th scope="col">MAC</th>
                    <th scope="col">GPU UUID</th>
                    <th scope="col">Pool</th>
                    <th scope="col">Hostname</th>
                    <th scope="col">Expires</th>
                  </tr>
                </thead>
                <tbody>
                  {items.map((m) => (
                    <tr key={m.id}>
                      <td>{m.serial ?? '—'}</td>
                      <td>{m.productUuid ?? '—'}</td>
                      <td>{m.mac ?? '—'}</td>
                      <td>{m.gpuUuid ?? '—'}</td>
                      <td>{poolNames.get(m.poolId) ?? m.poolId}</td>
                      <td>{m.hostname ?? '—'}</td>
                      <td>{m.expiresAt ? <LocalTime iso={m.expiresAt} /> : <span className="muted">never</span>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
            {waiting.data && waiting.data.total > items.length && (
              <p className="field-hint">
                The newest {items.length} of {waiting.data.total} are shown.
              </p>
            )}
          </section>
        )}
      </QueryStates>

      <h2 className="detail-heading">Arrived</h2>
      <QueryStates
        query={arrived}
        items={arrived.data?.items ?? []}
        loading="Loading arrivals…"
        what="arrived machines"
        empty="No expected machine has arrived yet."
      >
        {(items) => (
          <section className="panel" aria-label="Arrived">
            <TableScroll label="Arrived machines">
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">Identifier</th>
                    <th scope="col">Pool</th>
                    <th scope="col">Arrived</th>
                    <th scope="col">Join request</th>
                  </tr>
                </thead>
                <tbody>
                  {items.map((m) => (
                    <tr key={m.id}>
                      <td>{m.mac ?? m.serial ?? m.productUuid ?? m.gpuUuid}</td>
                      <td>{poolNames.get(m.poolId) ?? m.poolId}</td>
                      <td>{m.arrivedAt && <LocalTime iso={m.arrivedAt} />}</td>
                      <td>
                        <code>{m.requestId}</code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
          </section>
        )}
      </QueryStates>

      <h2 className="detail-heading">Arrivals that matched nothing (last 7 days)</h2>
      <QueryStates
        query={unmatched}
        items={unmatched.data?.items ?? []}
        loading="Loading arrivals…"
        what="unmatched arrivals"
        empty="Every PXE arrival of the last 7 days matched an expected machine."
      >
        {(items) => (
          <section className="panel" aria-label="Arrivals that matched nothing">
            <TableScroll label="Unmatched arrivals">
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">Request</th>
                    <th scope="col">State</th>
                    <th scope="col">MAC (vouched)</th>
                    <th scope="col">Hostname (claimed)</th>
                    <th scope="col">Serial (claimed)</th>
                    <th scope="col">Arrived</th>
                  </tr>
                </thead>
                <tbody>
                  {items.map((r) => (
                    <tr key={r.requestId}>
                      <td>
                        <code>{r.requestId}</code>
                      </td>
                      <td>
                        {r.state}
                        {r.decidedBy && <span className="cell-sub">by {r.decidedBy}</span>}
                      </td>
                      <td>{r.mac ?? '—'}</td>
                      <td>{r.hostname ?? '—'}</td>
                      <td>{r.serial ?? '—'}</td>
                      <td>
                        <LocalTime iso={r.createdAt} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
          </section>
        )}
      </QueryStates>
    </>
  );
}

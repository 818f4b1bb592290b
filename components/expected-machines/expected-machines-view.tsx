'use client';

import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { DataList } from '@/components/ui/data-table';
import { LocalTime } from '@/components/ui/time';
import type { Tenant } from '@/lib/api-types';
import { can } from '@/lib/can';
import { useLiveRefresh } from '@/lib/live';
import { useTRPC } from '@/lib/trpc';
import { SitePicker, useSiteParam } from '@/components/sites/site-picker';
import { ImportPanel } from './import-panel';

export function ExpectedMachinesView() {
  return <TenantGate>{(tenant) => <TenantExpectedMachines key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/** A site's expected machines (`?site=`): import a list, see who has not arrived, who arrived, and arrivals nobody listed. */
function TenantExpectedMachines({ tenant }: { tenant: Tenant }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const { sites, pools, siteId, setSiteId } = useSiteParam(tenant);
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
            <SitePicker sites={sites.data?.items} value={siteId} onChange={setSiteId} />
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
      <DataList
        query={waiting}
        loading="Loading expected machines…"
        what="expected machines"
        empty="No expected machine is waiting in this site."
        panel="Not arrived yet"
        label="Machines not arrived yet"
        rowKey={(m) => m.id}
        footer={
          waiting.data &&
          waiting.data.total > waiting.data.items.length && (
            <p className="field-hint">
              The newest {waiting.data.items.length} of {waiting.data.total} are shown.
            </p>
          )
        }
        columns={[
          { id: 'serial', header: 'Serial', cell: (m) => m.serial ?? '—' },
          { id: 'uuid', header: 'Product UUID', cell: (m) => m.productUuid ?? '—' },
          { id: 'mac', header: 'MAC', cell: (m) => m.mac ?? '—' },
          { id: 'gpu', header: 'GPU UUID', cell: (m) => m.gpuUuid ?? '—' },
          { id: 'pool', header: 'Pool', cell: (m) => poolNames.get(m.poolId) ?? m.poolId },
          { id: 'hostname', header: 'Hostname', cell: (m) => m.hostname ?? '—' },
          {
            id: 'expires',
            header: 'Expires',
            cell: (m) => (m.expiresAt ? <LocalTime iso={m.expiresAt} /> : <span className="muted">never</span>),
          },
        ]}
      />

      <h2 className="detail-heading">Arrived</h2>
      <DataList
        query={arrived}
        loading="Loading arrivals…"
        what="arrived machines"
        empty="No expected machine has arrived yet."
        panel="Arrived"
        label="Arrived machines"
        rowKey={(m) => m.id}
        columns={[
          { id: 'identifier', header: 'Identifier', cell: (m) => m.mac ?? m.serial ?? m.productUuid ?? m.gpuUuid },
          { id: 'pool', header: 'Pool', cell: (m) => poolNames.get(m.poolId) ?? m.poolId },
          { id: 'arrived', header: 'Arrived', cell: (m) => m.arrivedAt && <LocalTime iso={m.arrivedAt} /> },
          { id: 'request', header: 'Join request', cell: (m) => <code>{m.requestId}</code> },
        ]}
      />

      <h2 className="detail-heading">Arrivals that matched nothing (last 7 days)</h2>
      <DataList
        query={unmatched}
        loading="Loading arrivals…"
        what="unmatched arrivals"
        empty="Every PXE arrival of the last 7 days matched an expected machine."
        panel="Arrivals that matched nothing"
        label="Unmatched arrivals"
        rowKey={(r) => r.requestId}
        columns={[
          { id: 'request', header: 'Request', cell: (r) => <code>{r.requestId}</code> },
          {
            id: 'state',
            header: 'State',
            cell: (r) => (
              <>
                {r.state}
                {r.decidedBy && <span className="cell-sub">by {r.decidedBy}</span>}
              </>
            ),
          },
          { id: 'mac', header: 'MAC (vouched)', cell: (r) => r.mac ?? '—' },
          { id: 'hostname', header: 'Hostname (claimed)', cell: (r) => r.hostname ?? '—' },
          { id: 'serial', header: 'Serial (claimed)', cell: (r) => r.serial ?? '—' },
          { id: 'arrived', header: 'Arrived', cell: (r) => <LocalTime iso={r.createdAt} /> },
        ]}
      />
    </>
  );
}

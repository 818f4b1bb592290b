'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { ConfirmButton } from '@/components/ui/confirm-dialog';
import { actionsColumn, nameColumn } from '@/components/ui/data-columns';
import { DataList, type DataColumn } from '@/components/ui/data-table';
import { toApiError } from '@/lib/api-errors';
import type { Site, Tenant } from '@/lib/api-types';
import { can } from '@/lib/can';
import { useLiveRefresh } from '@/lib/live';
import { useTRPC } from '@/lib/trpc';
import { CreateSiteDialog } from './create-site-dialog';
import { SiteSettingsDialog } from './site-settings-dialog';
import { Notice, Toggle } from '@/components/ui/notice';

export function SitesView() {
  return <TenantGate>{(tenant) => <TenantSites key={tenant.id} tenant={tenant} />}</TenantGate>;
}

const hours = (seconds: number) => `${Math.round((seconds / 3600) * 100) / 100} h`;

/** The tenant's sites with their join settings; admins create sites and edit the settings. */
function TenantSites({ tenant }: { tenant: Tenant }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [showArchived, setShowArchived] = useState(false);
  const [isCreating, setCreating] = useState(false);
  const [editing, setEditing] = useState<Site | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const sites = useQuery(trpc.sites.list.queryOptions({ tenantId: tenant.id, includeArchived: showArchived }));
  useLiveRefresh([trpc.sites.list.pathFilter()], { eventsOf: tenant.id });
  const canManage = can(tenant, 'compute:sites:manage');
  const archive = useMutation(
    trpc.sites.archive.mutationOptions({ onSuccess: () => queryClient.invalidateQueries(trpc.sites.pathFilter()) }),
  );

  return (
    <>
      <PageHeader
        title="Sites"
        description={
          <>
            Where machines join from: each site holds pools, a join queue and its own settings for PXE and TPM machines. Tenant{' '}
            <strong>{tenant.name}</strong>.
          </>
        }
        actions={
          <>
            <Toggle label="Show archived" checked={showArchived} onChange={setShowArchived} />
            {canManage && (
              <button
                type="button"
                className="btn btn-primary"
                onClick={() => {
                  setNotice(null);
                  setCreating(true);
                }}
              >
                Create site
              </button>
            )}
          </>
        }
      />
      <Notice notice={notice} onDismiss={() => setNotice(null)} />
      <DataList
        query={sites}
        loading="Loading sites…"
        what="sites"
        empty="This tenant has no sites yet."
        panel="Sites"
        label="Sites table"
        rowKey={(site) => site.id}
        rowClassName={(site) => (site.archivedAt ? 'row-archived' : undefined)}
        columns={siteColumns({
          canManage,
          onSettings: setEditing,
          archiveButton: (site) => (
            <ConfirmButton
              label="Archive"
              ariaLabel={`Archive site ${site.name}`}
              title={`Archive site ${site.name}?`}
              confirmLabel="Archive site"
              pendingLabel="Archiving…"
              mutation={archive}
              errorMessage={(error) => toApiError(error).message}
              onConfirm={(close) => archive.mutate({ tenantId: tenant.id, siteId: site.id }, { onSuccess: close })}
            >
              <p>It takes no new pools and no new joins. A site with live pools cannot be archived: archive them first.</p>
            </ConfirmButton>
          ),
        })}
      />
      <CreateSiteDialog
        open={isCreating}
        tenantId={tenant.id}
        onClose={() => setCreating(false)}
        onCreated={(site) => {
          setCreating(false);
          setNotice(`Site ${site.name} created. Its settings are the defaults; change them with Settings.`);
        }}
      />
      <SiteSettingsDialog site={editing} tenantId={tenant.id} onClose={() => setEditing(null)} />
    </>
  );
}

interface SiteColumnsOptions {
  canManage: boolean;
  onSettings: (site: Site) => void;
  archiveButton: (site: Site) => ReactNode;
}

function siteColumns({ canManage, onSettings, archiveButton }: SiteColumnsOptions): DataColumn<Site>[] {
  return [
    nameColumn('Site', (site) => (
      <>
        <span className="pool-name">{site.name}</span>
        <code className="id">{site.id}</code>
      </>
    )),
    { id: 'kind', header: 'Kind', cell: (site) => site.kind },
    {
      id: 'pxe',
      header: 'PXE machines',
      cell: (site) => (site.discovery.approval === 'always' ? 'held for a person' : 'known ones admitted'),
    },
    {
      id: 'queue',
      header: 'Queue',
      cell: (site) => (
        <>
          at most {site.discovery.maxPendingRequests.toLocaleString('en')}
          <span className="cell-sub">wait {hours(site.discovery.pendingTtlSeconds)}</span>
        </>
      ),
    },
    {
      id: 'tpm',
      header: 'TPM enrollment',
      cell: (site) => (
        <>
          {site.tpm.enrollment ? 'on' : 'off'}
          <span className="cell-sub">wait {hours(site.tpm.pendingTtlSeconds)}</span>
        </>
      ),
    },
    { id: 'approvals', header: 'Approvals', cell: (site) => (site.requiredApprovals === 2 ? 'two people' : 'one') },
    {
      id: 'status',
      header: 'Status',
      cell: (site) =>
        site.archivedAt ? <span className="status status-archived">Archived</span> : <span className="status status-active">Active</span>,
    },
    actionsColumn(
      (site) =>
        canManage &&
        !site.archivedAt && (
          <>
            <button
              type="button"
              className="btn btn-small btn-quiet"
              aria-label={`Settings of site ${site.name}`}
              onClick={() => onSettings(site)}
            >
              Settings
            </button>
            {archiveButton(site)}
          </>
        ),
    ),
  ];
}

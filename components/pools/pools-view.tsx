'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useState } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { LoadingRows, QueryError } from '@/components/ui/query-state';
import type { Pool, Tenant } from '@/lib/api-types';
import { can } from '@/lib/can';
import { useLiveRefresh } from '@/lib/live';
import { withTenant } from '@/lib/tenant-url';
import { useTRPC } from '@/lib/trpc';
import { CreatePoolDialog } from './create-pool-dialog';
import { SitePools } from './site-pools';
import { Notice, Toggle } from '@/components/ui/notice';

export function PoolsView() {
  return <TenantGate>{(tenant) => <TenantPools key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/** The tenant's sites, each with its pools, and the create-pool dialog. */
function TenantPools({ tenant }: { tenant: Tenant }) {
  const trpc = useTRPC();
  const [showArchived, setShowArchived] = useState(false);
  const [isCreating, setCreating] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const scope = { tenantId: tenant.id, includeArchived: showArchived };
  const sites = useQuery(trpc.sites.list.queryOptions(scope));
  const pools = useQuery(trpc.pools.list.queryOptions(scope));
  const counts = useQuery(trpc.pools.counts.queryOptions({ tenantId: tenant.id }));
  useLiveRefresh([trpc.pools.pathFilter(), trpc.sites.list.pathFilter()], { eventsOf: tenant.id });
  const countsByPool = new Map(counts.data?.items.map((c) => [c.poolId, c]));
  const canManage = can(tenant, 'compute:pools:manage');
  const liveSites = sites.data?.items.filter((site) => !site.archivedAt) ?? [];

  const poolsBySite = new Map<string, Pool[]>();
  for (const pool of pools.data?.items ?? []) poolsBySite.set(pool.siteId, [...(poolsBySite.get(pool.siteId) ?? []), pool]);

  return (
    <>
      <PageHeader
        title="Pools"
        description={
          <>
            A pool groups the machines of one site that join under one policy. Tenant <strong>{tenant.name}</strong>.
          </>
        }
        actions={
          <>
            <Toggle label="Show archived" checked={showArchived} onChange={setShowArchived} />
            {canManage && (
              <button
                type="button"
                className="btn btn-primary"
                disabled={!liveSites.length}
                title={sites.isSuccess && !liveSites.length ? 'Pools live in a site; this tenant has no live site.' : undefined}
                onClick={() => {
                  setNotice(null);
                  setCreating(true);
                }}
              >
                Create pool
              </button>
            )}
          </>
        }
      />
      <Notice notice={notice} onDismiss={() => setNotice(null)} />
      {sites.isPending || pools.isPending ? (
        <LoadingRows label="Loading sites and pools…" />
      ) : sites.isError ? (
        <QueryError error={sites.error} what="sites" onRetry={() => void sites.refetch()} />
      ) : pools.isError ? (
        <QueryError error={pools.error} what="pools" onRetry={() => void pools.refetch()} />
      ) : sites.data.items.length === 0 ? (
        <div className="callout">
          <strong>This tenant has no sites yet.</strong> A pool lives in a site: create one on{' '}
          <Link href={withTenant('/sites', tenant.id)}>Sites</Link> first.
        </div>
      ) : (
        sites.data.items.map((site) => (
          <SitePools
            key={site.id}
            site={site}
            pools={poolsBySite.get(site.id) ?? []}
            tenantId={tenant.id}
            counts={countsByPool}
            canManage={canManage}
            canManageSite={can(tenant, 'compute:sites:manage')}
          />
        ))
      )}
      <CreatePoolDialog
        open={isCreating}
        tenantId={tenant.id}
        sites={liveSites}
        onClose={() => setCreating(false)}
        onCreated={(pool, siteName) => {
          setCreating(false);
          setNotice(`Pool ${pool.name} created in site ${siteName}.`);
        }}
      />
    </>
  );
}

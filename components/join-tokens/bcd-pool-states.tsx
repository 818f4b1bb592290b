'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import type { ReactNode } from 'react';
import { LoadingRows, QueryError } from '@/components/ui/query-state';
import type { Pool, Tenant } from '@/lib/api-types';
import { joinablePools, queuePoolOf } from '@/lib/join-request-queue';
import { withTenant } from '@/lib/tenant-url';
import { useTRPC } from '@/lib/trpc';

/**
 * The tenant's pools a machine can join (live, running bcd: the others take no join token and no approval),
 * the one the page shows (`requested`, the URL's, else the first) and the sites' names.
 */
export function useBcdPool(tenant: Tenant, requested: string | null) {
  const trpc = useTRPC();
  const sites = useQuery(trpc.sites.list.queryOptions({ tenantId: tenant.id }));
  const pools = useQuery(trpc.pools.list.queryOptions({ tenantId: tenant.id }));
  const joinable = joinablePools(pools.data?.items ?? []);
  const siteNames = new Map(sites.data?.items.map((site) => [site.id, site.name]));
  return { pools, joinable, pool: queuePoolOf(joinable, requested), requested, siteNames };
}

interface BcdPoolStatesProps {
  tenant: Tenant;
  bcd: ReturnType<typeof useBcdPool>;
  /** Why the page needs a bcd pool, and where to create one (`poolsLink` leads there). */
  needsPool: (poolsLink: ReactNode) => ReactNode;
  children: (pool: Pool) => ReactNode;
}

/**
 * A page of one bcd pool (join tokens, join requests): the pool's content, or why there is none: the pools
 * are loading or failed to, the tenant has no bcd pool, or the URL names a pool that is not one.
 */
export function BcdPoolStates({ tenant, bcd, needsPool, children }: BcdPoolStatesProps) {
  const { pools, joinable, pool, requested } = bcd;
  if (pools.isPending) return <LoadingRows label="Loading pools…" />;
  if (pools.isError) return <QueryError error={pools.error} what="pools" onRetry={() => void pools.refetch()} />;
  if (joinable.length === 0) {
    return (
      <div className="callout">
        <strong>This tenant has no pool whose machines run bcd.</strong>{' '}
        {needsPool(<Link href={withTenant('/pools', tenant.id)}>Pools</Link>)}
      </div>
    );
  }
  if (!pool) {
    return (
      <div className="callout callout-error" role="alert">
        <strong>Pool “{requested}” not found.</strong> It does not exist in tenant {tenant.name}, is archived, or its machines run no
        daemon. Choose a pool above.
      </div>
    );
  }
  return children(pool);
}

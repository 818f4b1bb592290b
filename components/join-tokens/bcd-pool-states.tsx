import Link from 'next/link';
import type { ReactNode } from 'react';
import { LoadingRows, QueryError } from '@/components/ui/query-state';
import type { Pool, Tenant } from '@/lib/api-types';
import { withTenant } from '@/lib/tenant-url';

interface BcdPoolStatesProps {
  tenant: Tenant;
  pools: { isPending: boolean; isError: boolean; error: unknown; refetch: () => unknown };
  /** The tenant's live pools whose machines run bcd. */
  joinable: Pool[];
  /** The pool the page shows: the one the URL names, else the first joinable one. */
  pool: Pool | undefined;
  /** The pool id the URL names, if any. */
  requested: string | null | undefined;
  /** Why the page needs a bcd pool, and where to create one (`poolsLink` leads there). */
  needsPool: (poolsLink: ReactNode) => ReactNode;
  children: (pool: Pool) => ReactNode;
}

/**
 * A page of one bcd pool (join tokens, join requests): the pool's content, or why there is none: the pools
 * are loading or failed to, the tenant has no bcd pool, or the URL names a pool that is not one.
 */
export function BcdPoolStates({ tenant, pools, joinable, pool, requested, needsPool, children }: BcdPoolStatesProps) {
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

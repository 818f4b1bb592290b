'use client';

import { useQuery } from '@tanstack/react-query';
import { useSearchParams } from 'next/navigation';
import { selectTenant, TENANTS_STALE_MS, type SelectedTenant } from './tenant-selection';
import { TENANT_PARAM } from './tenant-url';
import { useTRPC } from './trpc';

type TenantSelection = { status: 'loading' } | ({ status: 'error'; message: string } & TenantSelectionError) | SelectedTenant;

/** What the error state of the selection offers: the failure and a way to try again. */
type TenantSelectionError = { error: unknown; retry: () => void };

/**
 * The tenant the console shows: `?tenant=` (an id or a name) when given, else the operator's first tenant.
 * A `?tenant=` the operator cannot see is reported as such rather than silently replaced by another tenant.
 */
export function useTenantSelection(): TenantSelection {
  const trpc = useTRPC();
  const requested = useSearchParams().get(TENANT_PARAM);
  const tenants = useQuery(trpc.tenants.list.queryOptions({}, { staleTime: TENANTS_STALE_MS }));
  if (tenants.isPending) return { status: 'loading' };
  if (tenants.isError)
    return { status: 'error', message: tenants.error.message, error: tenants.error, retry: () => void tenants.refetch() };
  return selectTenant(tenants.data.items, requested);
}

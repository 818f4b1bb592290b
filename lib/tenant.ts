'use client';

import { useQuery } from '@tanstack/react-query';
import { useSearchParams } from 'next/navigation';
import type { Tenant } from './api-types';
import { TENANT_PARAM } from './tenant-url';
import { useTRPC } from './trpc';

type TenantSelection =
  | { status: 'loading' }
  | ({ status: 'error'; message: string } & TenantSelectionError)
  | { status: 'none' }
  | { status: 'unknown'; requested: string }
  | { status: 'ready'; tenant: Tenant; tenants: Tenant[] };

/** What the error state of the selection offers: the failure and a way to try again. */
type TenantSelectionError = { error: unknown; retry: () => void };

/**
 * The tenant the console shows: `?tenant=` (an id or a name) when given, else the operator's first tenant.
 * A `?tenant=` the operator cannot see is reported as such rather than silently replaced by another tenant.
 */
export function useTenantSelection(): TenantSelection {
  const trpc = useTRPC();
  const requested = useSearchParams().get(TENANT_PARAM);
  const tenants = useQuery(trpc.tenants.list.queryOptions({}, { staleTime: 60_000 }));
  if (tenants.isPending) return { status: 'loading' };
  if (tenants.isError)
    return { status: 'error', message: tenants.error.message, error: tenants.error, retry: () => void tenants.refetch() };
  // Root admins also see tenants they only administer from outside; the console works inside a tenant.
  const items = tenants.data.items.filter((t) => t.isMember);
  if (items.length === 0) return { status: 'none' };
  if (!requested) return { status: 'ready', tenant: items[0]!, tenants: items };
  const tenant = items.find((t) => t.id === requested) ?? items.find((t) => t.name === requested);
  return tenant ? { status: 'ready', tenant, tenants: items } : { status: 'unknown', requested };
}

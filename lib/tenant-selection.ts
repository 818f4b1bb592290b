import type { Tenant } from './api-types';

/** How long the operator's tenants (`tenants.list({})`) count as fresh, in the browser and when read on the server. */
export const TENANTS_STALE_MS = 60_000;

/** The tenant the console shows, from the operator's tenants and `?tenant=`; what useTenantSelection reports. */
export type SelectedTenant =
  { status: 'none' } | { status: 'unknown'; requested: string } | { status: 'ready'; tenant: Tenant; tenants: Tenant[] };

/**
 * `?tenant=` (an id or a name) when given, else the operator's first tenant. A `?tenant=` the operator cannot
 * see is reported as such rather than silently replaced by another tenant. The browser and the server's
 * prefetch (app/(console)/page-readers.ts) choose with this one function, so they read the same queries.
 */
export function selectTenant(listed: readonly Tenant[], requested: string | null): SelectedTenant {
  // Root admins also see tenants they only administer from outside; the console works inside a tenant.
  const items = listed.filter((t) => t.isMember);
  if (items.length === 0) return { status: 'none' };
  if (!requested) return { status: 'ready', tenant: items[0]!, tenants: items };
  const tenant = items.find((t) => t.id === requested) ?? items.find((t) => t.name === requested);
  return tenant ? { status: 'ready', tenant, tenants: items } : { status: 'unknown', requested };
}

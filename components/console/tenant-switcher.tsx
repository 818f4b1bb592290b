'use client';

import { usePathname, useRouter } from 'next/navigation';
import { useTenantSelection } from '@/lib/tenant';
import { useHydrated } from '@/lib/use-now';
import { withTenant } from '@/lib/tenant-url';

/** Shows the current tenant; a select when the operator belongs to several. The choice lives in `?tenant=`. */
export function TenantSwitcher() {
  const selection = useTenantSelection();
  const router = useRouter();
  const pathname = usePathname();
  // The server renders the shell before a page has read the tenants (the queue reads them ahead, after): the
  // switcher shows once hydrated, so the browser's first render matches the server's whatever the cache holds.
  const isHydrated = useHydrated();
  if (!isHydrated || selection.status !== 'ready') return null;
  const { tenant, tenants } = selection;
  if (tenants.length < 2) {
    return (
      <div className="tenant-current" title={tenant.id}>
        <span className="topbar-label">Tenant</span>
        <span className="tenant-name">{tenant.name}</span>
      </div>
    );
  }
  return (
    <label className="tenant-current">
      <span className="topbar-label">Tenant</span>
      <select
        className="tenant-select"
        aria-label="Tenant"
        value={tenant.id}
        onChange={(event) => router.push(withTenant(pathname, event.target.value))}
      >
        {tenants.map((t) => (
          <option key={t.id} value={t.id}>
            {t.name}
          </option>
        ))}
      </select>
    </label>
  );
}

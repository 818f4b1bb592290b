'use client';

import { useQuery } from '@tanstack/react-query';
import { Picker } from '@/components/ui/picker';
import type { Site, Tenant } from '@/lib/api-types';
import { useTRPC } from '@/lib/trpc';
import { useUrlParams } from '@/lib/url-state';

/** The site a per-site page shows (`?site=`, else the tenant's first), with the tenant's sites and pools. */
export function useSiteParam(tenant: Tenant) {
  const trpc = useTRPC();
  const [params, setParams] = useUrlParams(['site'] as const);
  const sites = useQuery(trpc.sites.list.queryOptions({ tenantId: tenant.id }));
  const pools = useQuery(trpc.pools.list.queryOptions({ tenantId: tenant.id }));
  const siteId = params.site ?? sites.data?.items[0]?.id ?? null;
  return { sites, pools, siteId, setSiteId: (site: string) => setParams({ site: site || null }) };
}

export function SitePicker({
  sites,
  value,
  onChange,
}: {
  sites: Site[] | undefined;
  value: string | null;
  onChange: (siteId: string) => void;
}) {
  return (
    <Picker label="Site" value={value ?? ''} onChange={onChange}>
      {sites?.map((site) => (
        <option key={site.id} value={site.id}>
          {site.name}
        </option>
      ))}
    </Picker>
  );
}

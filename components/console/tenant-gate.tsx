'use client';

import Link from 'next/link';
import { usePathname } from 'next/navigation';
import type { ReactNode } from 'react';
import type { Tenant } from '@/lib/api-types';
import { useTenantSelection } from '@/lib/tenant';
import { LoadingRows, QueryError } from '@/components/ui/query-state';

/** Renders `children` for the selected tenant, and the loading, error and unknown-tenant states otherwise. */
export function TenantGate({ children }: { children: (tenant: Tenant) => ReactNode }) {
  const selection = useTenantSelection();
  const pathname = usePathname();
  switch (selection.status) {
    case 'loading':
      return <LoadingRows label="Loading tenants…" />;
    case 'error':
      return <QueryError error={selection.error} what="your tenants" onRetry={selection.retry} />;
    case 'none':
      return (
        <div className="callout">
          <strong>You belong to no tenant.</strong> Ask an administrator of your organisation to add you to one.
        </div>
      );
    case 'unknown':
      return (
        <div className="callout callout-error" role="alert">
          <strong>Tenant “{selection.requested}” not found.</strong> It does not exist or you are not a member.{' '}
          <Link href={pathname}>Show your first tenant</Link>
        </div>
      );
    case 'ready':
      return <>{children(selection.tenant)}</>;
  }
}

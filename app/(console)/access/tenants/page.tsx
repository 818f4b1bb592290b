import type { Metadata } from 'next';
import { TenantsView } from '@/components/access/tenants-view';
import { PrefetchedPage, type SearchParams } from '../../prefetch';

export const metadata: Metadata = { title: 'Tenants' };

/** Every tenant, from the operator's tenants that every page reads ahead. */
export default function TenantsPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} loading="Loading tenants…">
      <TenantsView />
    </PrefetchedPage>
  );
}

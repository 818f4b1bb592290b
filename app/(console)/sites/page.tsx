import type { Metadata } from 'next';
import { SitesView } from '@/components/sites/sites-view';
import { readSites } from '../page-readers';
import { PrefetchedPage, type SearchParams } from '../prefetch';

export const metadata: Metadata = { title: 'Sites' };

export default function SitesPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} read={readSites} loading="Loading sites…">
      <SitesView />
    </PrefetchedPage>
  );
}

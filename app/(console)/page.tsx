import type { Metadata } from 'next';
import { OverviewView } from '@/components/overview/overview-view';
import { readOverview } from './page-readers';
import { PrefetchedPage, type SearchParams } from './prefetch';

export const metadata: Metadata = { title: 'Overview' };

/** The console's landing page: the tenant's overview (the tenant comes from `?tenant=`, as on every page), read on the server. */
export default function ConsoleHome({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} read={readOverview} loading="Loading the overview…">
      <OverviewView />
    </PrefetchedPage>
  );
}

import type { Metadata } from 'next';
import { PoolsView } from '@/components/pools/pools-view';
import { readPools } from '../page-readers';
import { PrefetchedPage, type SearchParams } from '../prefetch';

export const metadata: Metadata = { title: 'Pools' };

export default function PoolsPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} read={readPools} loading="Loading pools…">
      <PoolsView />
    </PrefetchedPage>
  );
}

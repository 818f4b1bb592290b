import type { Metadata } from 'next';
import { RefusedJoinsView } from '@/components/refused-joins/refused-joins-view';
import { readRefusedJoins } from '../page-readers';
import { PrefetchedPage, type SearchParams } from '../prefetch';

export const metadata: Metadata = { title: 'Refused joins' };

export default function RefusedJoinsPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} read={readRefusedJoins} loading="Loading refused joins…">
      <RefusedJoinsView />
    </PrefetchedPage>
  );
}

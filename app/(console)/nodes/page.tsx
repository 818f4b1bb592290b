import type { Metadata } from 'next';
import { NodesView } from '@/components/nodes/nodes-view';
import { readNodes } from '../page-readers';
import { PrefetchedPage, type SearchParams } from '../prefetch';

export const metadata: Metadata = { title: 'Nodes' };

export default function NodesPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} read={readNodes} loading="Loading nodes…">
      <NodesView />
    </PrefetchedPage>
  );
}

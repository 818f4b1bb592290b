import type { Metadata } from 'next';
import { NodeDetailView } from '@/components/nodes/node-detail-view';
import { readNode } from '../../page-readers';
import { PrefetchedPage, type SearchParams } from '../../prefetch';

export const metadata: Metadata = { title: 'Node' };

export default async function NodePage({
  params,
  searchParams,
}: {
  params: Promise<{ nodeId: string }>;
  searchParams: Promise<SearchParams>;
}) {
  const { nodeId } = await params;
  return (
    <PrefetchedPage searchParams={searchParams} read={readNode(nodeId)} loading="Loading node…">
      <NodeDetailView nodeId={nodeId} />
    </PrefetchedPage>
  );
}

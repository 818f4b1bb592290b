import type { Metadata } from 'next';
import { NodeDetailView } from '@/components/nodes/node-detail-view';

export const metadata: Metadata = { title: 'Node' };

export default async function NodePage({ params }: { params: Promise<{ nodeId: string }> }) {
  const { nodeId } = await params;
  return <NodeDetailView nodeId={nodeId} />;
}

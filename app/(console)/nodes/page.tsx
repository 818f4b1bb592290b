import type { Metadata } from 'next';
import { PlannedPage } from '@/components/console/planned-page';

export const metadata: Metadata = { title: 'Nodes' };

export default function NodesPage() {
  return (
    <PlannedPage title="Nodes" summary="Machines that joined, with their identity and acceptance state.">
      <p>
        This page will list the tenant’s nodes by site and pool: state (adopting, adopted), the attestor that admitted each, whether its hardware
        key is trusted, its identity generation and current certificate, and acceptance results.
      </p>
      <p>From a node you will be able to follow its join and reclaim history and adopt it once acceptance has passed.</p>
    </PlannedPage>
  );
}

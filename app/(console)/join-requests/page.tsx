import type { Metadata } from 'next';
import { JoinRequestsView } from '@/components/join-requests/join-requests-view';

export const metadata: Metadata = { title: 'Join requests' };

export default function JoinRequestsPage() {
  return <JoinRequestsView />;
}

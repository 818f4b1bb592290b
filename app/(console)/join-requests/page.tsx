import type { Metadata } from 'next';
import { JoinRequestsView } from '@/components/join-requests/join-requests-view';
import { readJoinRequests } from '../page-readers';
import { PrefetchedPage, type SearchParams } from '../prefetch';

export const metadata: Metadata = { title: 'Join requests' };

export default function JoinRequestsPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} read={readJoinRequests} loading="Loading join requests…">
      <JoinRequestsView />
    </PrefetchedPage>
  );
}

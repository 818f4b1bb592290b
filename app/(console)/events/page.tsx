import type { Metadata } from 'next';
import { EventsView } from '@/components/events/events-view';
import { readEvents } from '../page-readers';
import { PrefetchedPage, type SearchParams } from '../prefetch';

export const metadata: Metadata = { title: 'Events' };

export default function EventsPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} read={readEvents} loading="Loading events…">
      <EventsView />
    </PrefetchedPage>
  );
}

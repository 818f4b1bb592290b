import type { Metadata } from 'next';
import { WebhooksView } from '@/components/webhooks/webhooks-view';
import { readWebhooks } from '../page-readers';
import { PrefetchedPage, type SearchParams } from '../prefetch';

export const metadata: Metadata = { title: 'Webhooks' };

export default function WebhooksPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} read={readWebhooks} loading="Loading webhooks…">
      <WebhooksView />
    </PrefetchedPage>
  );
}

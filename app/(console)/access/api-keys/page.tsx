import type { Metadata } from 'next';
import { ApiKeysView } from '@/components/access/api-keys-view';
import { readApiKeys } from '../../page-readers';
import { PrefetchedPage, type SearchParams } from '../../prefetch';

export const metadata: Metadata = { title: 'API keys' };

export default function ApiKeysPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} read={readApiKeys} loading="Loading API keys…">
      <ApiKeysView />
    </PrefetchedPage>
  );
}

import type { Metadata } from 'next';
import { JoinTokensView } from '@/components/join-tokens/join-tokens-view';
import { readJoinTokens } from '../page-readers';
import { PrefetchedPage, type SearchParams } from '../prefetch';

export const metadata: Metadata = { title: 'Join tokens' };

export default function JoinTokensPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <PrefetchedPage searchParams={searchParams} read={readJoinTokens} loading="Loading join tokens…">
      <JoinTokensView />
    </PrefetchedPage>
  );
}

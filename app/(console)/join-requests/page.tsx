import type { Metadata } from 'next';
import { Suspense } from 'react';
import { HydrateQueries } from '@/components/console/hydrate-queries';
import { JoinRequestsView } from '@/components/join-requests/join-requests-view';
import { LoadingRows } from '@/components/ui/query-state';
import { prefetchJoinRequestQueue } from './prefetch';

export const metadata: Metadata = { title: 'Join requests' };

type SearchParams = Record<string, string | string[] | undefined>;

/**
 * The queue, with its first page read on the server: the HTML holds the rows, and the browser starts from the
 * same queries without asking for them again. The console's shell is sent while they are read.
 */
export default function JoinRequestsPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  return (
    <Suspense fallback={<LoadingRows label="Loading join requests…" />}>
      <PrefetchedJoinRequests searchParams={searchParams} />
    </Suspense>
  );
}

async function PrefetchedJoinRequests({ searchParams }: { searchParams: Promise<SearchParams> }) {
  // The URL as the browser's useSearchParams reads it: `get` answers a repeated parameter's first value.
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(await searchParams)) for (const one of [value ?? []].flat()) params.append(name, one);
  const state = await prefetchJoinRequestQueue(params);
  return (
    <HydrateQueries state={state}>
      <JoinRequestsView />
    </HydrateQueries>
  );
}

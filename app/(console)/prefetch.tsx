import type { DehydratedState } from '@tanstack/react-query';
import { Suspense, type ReactNode } from 'react';
import { HydrateQueries } from '@/components/console/hydrate-queries';
import { LoadingRows } from '@/components/ui/query-state';
import { prefetchAsConsole } from '@/server/api/prefetch';
import { nextEntry } from '@/server/boot/next-entry';
import { readConsolePage, type TenantPageReader } from './page-readers';

/** A console page's URL parameters, as Next hands them to the page. */
export type SearchParams = Record<string, string | string[] | undefined>;

/**
 * The operator's tenants and `page`'s queries (app/(console)/page-readers.ts), read on the server as the
 * session's operator; null when any read they depend on fails (the browser then reads as it would have).
 */
export function prefetchConsolePage(params: URLSearchParams, page?: TenantPageReader): Promise<DehydratedState | null> {
  return prefetchAsConsole(nextEntry().api(), readConsolePage(params, page));
}

/**
 * A console page whose first view is read on the server: the HTML holds it, and the browser starts from the
 * same queries without asking for them again. The console's shell is sent while they are read (`loading`).
 */
export function PrefetchedPage({
  searchParams,
  read,
  loading,
  children,
}: {
  searchParams: Promise<SearchParams>;
  /** The page's own queries, beyond the operator's tenants that every page reads. */
  read?: TenantPageReader;
  /** What the page shows while the server reads, e.g. "Loading pools…". */
  loading: string;
  children: ReactNode;
}) {
  return (
    <Suspense fallback={<LoadingRows label={loading} />}>
      <Prefetched searchParams={searchParams} read={read}>
        {children}
      </Prefetched>
    </Suspense>
  );
}

async function Prefetched({
  searchParams,
  read,
  children,
}: {
  searchParams: Promise<SearchParams>;
  read?: TenantPageReader;
  children: ReactNode;
}) {
  // The URL as the browser's useSearchParams reads it: `get` answers a repeated parameter's first value.
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(await searchParams)) for (const one of [value ?? []].flat()) params.append(name, one);
  return <HydrateQueries state={await prefetchConsolePage(params, read)}>{children}</HydrateQueries>;
}

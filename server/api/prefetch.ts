import { dehydrate, QueryClient, type DehydratedState } from '@tanstack/react-query';
import { createTRPCOptionsProxy, type TRPCOptionsProxy } from '@trpc/tanstack-react-query';
import { createApiContext, type ApiDeps } from './context';
import { appRouter, type AppRouter } from './root';

/** What a page's prefetch reads with: the console's query options and keys, on a query client of its own. */
export type PrefetchReader = (trpc: TRPCOptionsProxy<AppRouter>, queryClient: QueryClient) => Promise<void>;

/**
 * Reads console queries on the server for a page's first render, through the procedures themselves (their
 * authorization decides, as it would for the browser's call) with the principal `/api/trpc` would give the
 * same session cookie (`createApiContext`: the session version must still be current). The query keys are
 * the browser's (`createTRPCOptionsProxy` of the same router), so the page's `HydrationBoundary` hands the
 * browser exactly the queries it would have asked for.
 *
 * Answers the dehydrated queries, or null when there is no principal or any read fails: the page then renders
 * without them and the browser reads as it would have. Unexpected failures are logged by the procedures.
 */
export async function prefetchAsConsole(deps: ApiDeps, read: PrefetchReader): Promise<DehydratedState | null> {
  try {
    const ctx = await createApiContext(deps.db, new Headers(), deps.sessionOperatorId, deps.services);
    if (!ctx.principal) return null;
    const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });
    await read(createTRPCOptionsProxy<AppRouter>({ router: appRouter, ctx, queryClient }), queryClient);
    // Handed to the page as it is: React's serialization keeps `undefined` (a first page's param, which the
    // browser's next read must send as no cursor at all), which a JSON round trip would turn into null.
    return dehydrate(queryClient);
  } catch {
    return null;
  }
}

'use client';

import { HydrationBoundary, hydrate, useQueryClient, type DehydratedState } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';

/**
 * `HydrationBoundary` for queries a page's server component read ahead (server/api/prefetch.ts), with one
 * addition. HydrationBoundary hands a query that is already in the cache over in an effect, which never runs
 * on the server; but the console's shell (the tenant switcher, the nav) renders before the page and has
 * already asked for the tenants, leaving their query in the cache with no data. Such queries, present and
 * still without data, are given the server's answer during this render, so the server's HTML and the browser's
 * first render of the page both show it. A query with data of its own is left to HydrationBoundary.
 */
export function HydrateQueries({ state, children }: { state: DehydratedState | null; children: ReactNode }) {
  const queryClient = useQueryClient();
  useState(() => {
    if (!state) return;
    const cache = queryClient.getQueryCache();
    const empty = state.queries.filter((query) => {
      const existing = cache.get(query.queryHash);
      return existing !== undefined && existing.state.data === undefined && existing.state.dataUpdatedAt === 0;
    });
    if (empty.length > 0) hydrate(queryClient, { mutations: [], queries: empty });
  });
  return <HydrationBoundary state={state ?? undefined}>{children}</HydrationBoundary>;
}

'use client';

import { useQueryClient, type QueryFilters } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';

/**
 * Keeps the lists matched by `filters` current without a polling loop: they are re-read when the tab
 * comes back into view or the window regains focus (a machine may have joined, another operator may
 * have revoked a token meanwhile). Mutations of this page invalidate their lists themselves.
 *
 * The one place the console's liveness lives: when the server announces changes (tRPC over SSE, fed by
 * NOTIFY), this hook subscribes there and invalidates on each announcement instead, and every page that
 * uses it becomes live without another change.
 */
export function useLiveRefresh(filters: QueryFilters | QueryFilters[]) {
  const queryClient = useQueryClient();
  // The latest filters, without re-subscribing when the caller passes a fresh object each render.
  const filtersRef = useRef(filters);
  filtersRef.current = filters;

  useEffect(() => {
    let last = 0;
    const refresh = () => {
      if (document.visibilityState !== 'visible') return;
      // focus and visibilitychange usually fire together: one re-read is enough.
      const now = Date.now();
      if (now - last < 1_000) return;
      last = now;
      const list = Array.isArray(filtersRef.current) ? filtersRef.current : [filtersRef.current];
      for (const filter of list) void queryClient.invalidateQueries(filter);
    };
    window.addEventListener('focus', refresh);
    document.addEventListener('visibilitychange', refresh);
    return () => {
      window.removeEventListener('focus', refresh);
      document.removeEventListener('visibilitychange', refresh);
    };
  }, [queryClient]);
}

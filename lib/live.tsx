'use client';

import { useQueryClient, type Query, type QueryFilters } from '@tanstack/react-query';
import { useSubscription } from '@trpc/tanstack-react-query';
import { useEffect, useRef } from 'react';
import { useTRPC } from './trpc';

/** A pool whose join-request queue the server announces (`joinRequests.onChange`). */
interface LivePool {
  tenantId: string;
  poolId: string;
}

/**
 * Keeps the lists matched by `filters` current without a polling loop: they are re-read when the tab
 * comes back into view or the window regains focus (a machine may have joined, another operator may
 * have revoked a token meanwhile). Mutations of this page invalidate their lists themselves.
 *
 * The one place the console's liveness lives. Where the server announces changes (tRPC over SSE, fed by
 * NOTIFY) the caller names what to listen to — today `joinRequestsOf`, a pool's queue — and the lists are
 * also re-read on each announcement, at once. The focus refresh stays as the fallback: a dropped stream
 * (proxy timeout, laptop asleep) reconnects on its own, and whatever it missed is read when the operator
 * comes back. `eventsOf` (a tenant id) re-reads on the tenant's new events (`events.onChange`): every join,
 * refusal, decision, revocation and renewal writes one, so the events, refused-joins, nodes, token and pool
 * pages follow them; at most one re-read a second, however fast a fleet joins.
 */
export function useLiveRefresh(
  filters: QueryFilters | QueryFilters[],
  options: { joinRequestsOf?: LivePool | null; onJoinRequests?: (requestIds: string[]) => void; eventsOf?: string | null } = {},
) {
  const queryClient = useQueryClient();
  // The latest filters, without re-subscribing when the caller passes a fresh object each render.
  const filtersRef = useRef(filters);
  filtersRef.current = filters;
  const onJoinRequestsRef = useRef(options.onJoinRequests);
  onJoinRequestsRef.current = options.onJoinRequests;

  const trpc = useTRPC();
  // The server ends a stream whose caller it no longer accepts (signed out elsewhere, removed, key revoked):
  // re-reading the lists then meets the same refusal, which sends the operator to sign in.
  const reReadOnStreamEnd = () => {
    const list = Array.isArray(filtersRef.current) ? filtersRef.current : [filtersRef.current];
    for (const filter of list) void queryClient.invalidateQueries(filter);
  };
  // A list read before the stream was up may have missed an announcement: the server read the page's lists
  // ahead for its first render (app/(console)/page-readers.ts) before the browser could listen,
  // and a read in the browser can race the connection. Such lists are read again once the stream starts
  // (and restarts); one read after it started is not.
  const reReadIfReadBefore = (startedAt: number) => {
    const list = Array.isArray(filtersRef.current) ? filtersRef.current : [filtersRef.current];
    const readBefore = (query: Query) => query.state.status === 'success' && query.state.dataUpdatedAt < startedAt;
    for (const filter of list)
      void queryClient.invalidateQueries({ ...filter, predicate: (query) => readBefore(query) && (filter.predicate?.(query) ?? true) });
  };
  // Announcements can come faster than a list is read (a fleet joining on a bulk approval): re-reading with each
  // one, cancelling the read before, would starve the list and leave its count stale. One read at a time instead,
  // and one more after it when announcements arrived meanwhile, so the last change is always read.
  const reading = useRef<{ isRunning: boolean; isDirty: boolean }>({ isRunning: false, isDirty: false });
  const reReadCoalesced = async () => {
    const state = reading.current;
    state.isDirty = true;
    if (state.isRunning) return;
    state.isRunning = true;
    try {
      while (state.isDirty) {
        state.isDirty = false;
        const list = Array.isArray(filtersRef.current) ? filtersRef.current : [filtersRef.current];
        await Promise.all(list.map((filter) => queryClient.invalidateQueries(filter, { cancelRefetch: false })));
      }
    } finally {
      state.isRunning = false;
    }
  };
  const pool = options.joinRequestsOf ?? null;
  useSubscription(
    trpc.joinRequests.onChange.subscriptionOptions(pool ?? { tenantId: 'tnt_none', poolId: 'pool_none' }, {
      enabled: pool !== null,
      onStarted: () => reReadIfReadBefore(Date.now()),
      onData: (change) => {
        onJoinRequestsRef.current?.(change.requestIds);
        void reReadCoalesced();
      },
      onError: reReadOnStreamEnd,
    }),
  );

  const tenantId = options.eventsOf ?? null;
  const pendingRefresh = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => () => void (pendingRefresh.current && clearTimeout(pendingRefresh.current)), []);
  useSubscription(
    trpc.events.onChange.subscriptionOptions(tenantId ? { tenantId } : { tenantId: 'tnt_none' }, {
      enabled: tenantId !== null,
      onStarted: () => reReadIfReadBefore(Date.now()),
      onData: () => {
        // Throttled: the first announcement re-reads a moment later, and the ones meanwhile ride along.
        if (pendingRefresh.current) return;
        pendingRefresh.current = setTimeout(() => {
          pendingRefresh.current = null;
          const list = Array.isArray(filtersRef.current) ? filtersRef.current : [filtersRef.current];
          for (const filter of list) void queryClient.invalidateQueries(filter);
        }, 250);
      },
      onError: reReadOnStreamEnd,
    }),
  );

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

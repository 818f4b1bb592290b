'use client';

import { useEffect, useState, useSyncExternalStore } from 'react';

/**
 * The clock for "in 42 min", read every `intervalMs` (a minute by default). It is the browser's clock: a table
 * the server renders too (the join-request queue) shows what depends on it only once {@link useHydrated}.
 */
export function useNow(intervalMs = 60_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs]);
  return now;
}

/**
 * The clock for relative times ("5 min ago") in data the server may have rendered: until hydrated, the moment
 * the data was read (a query's `dataUpdatedAt`, the same in the server's render and the browser's first, since
 * the browser is handed the server's read), then the browser's clock as {@link useNow} reads it.
 */
export function useNowSince(readAt: number, intervalMs = 60_000): number {
  const now = useNow(intervalMs);
  return useHydrated() ? now : readAt;
}

const noSubscription = () => () => {};

/**
 * False on the server and while React hydrates the server's HTML, true after (and at once for a component
 * first rendered in the browser). What differs between the server and the browser (the clock, the time zone,
 * the locale) is rendered only when true, so hydration meets the same HTML the server sent.
 */
export function useHydrated(): boolean {
  return useSyncExternalStore(
    noSubscription,
    () => true,
    () => false,
  );
}

'use client';

import { usePathname, useRouter, useSearchParams } from 'next/navigation';
import { useEffect, useReducer, useRef } from 'react';

/**
 * Filters kept in the URL (`?type=…&range=…`), so a filtered list can be bookmarked, shared and reloaded.
 * `set` replaces the history entry: changing a filter is not a page to go back to.
 */
export function useUrlParams<K extends string>(
  names: readonly K[],
): [Record<K, string | null>, (changes: Partial<Record<K, string | null>>) => void] {
  const router = useRouter();
  const pathname = usePathname();
  const searchParams = useSearchParams();
  // Two changes in a row (reason, then range) must not read the URL the first has not replaced yet.
  const pending = useRef<URLSearchParams | null>(null);
  // A controlled input (a radio of a filter) must show the new value at once: React restores a controlled
  // input's old state right after its change event, and the replaced URL arrives only later.
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  useEffect(() => {
    pending.current = null;
  }, [searchParams]);
  const values = Object.fromEntries(names.map((name) => [name, (pending.current ?? searchParams).get(name)])) as Record<K, string | null>;
  function set(changes: Partial<Record<K, string | null>>) {
    const params = new URLSearchParams((pending.current ?? searchParams).toString());
    for (const [name, value] of Object.entries(changes) as [K, string | null][]) {
      if (value) params.set(name, value);
      else params.delete(name);
    }
    pending.current = params;
    rerender();
    const query = params.toString();
    router.replace(query ? `${pathname}?${query}` : pathname, { scroll: false });
  }
  return [values, set];
}

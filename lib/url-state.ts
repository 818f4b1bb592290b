'use client';

import { usePathname, useRouter, useSearchParams } from 'next/navigation';

/**
 * Filters kept in the URL (`?type=…&range=…`), so a filtered list can be bookmarked, shared and reloaded.
 * `set` replaces the history entry: changing a filter is not a page to go back to.
 */
export function useUrlParams<K extends string>(names: readonly K[]): [Record<K, string | null>, (changes: Partial<Record<K, string | null>>) => void] {
  const router = useRouter();
  const pathname = usePathname();
  const searchParams = useSearchParams();
  const values = Object.fromEntries(names.map((name) => [name, searchParams.get(name)])) as Record<K, string | null>;
  function set(changes: Partial<Record<K, string | null>>) {
    const params = new URLSearchParams(searchParams.toString());
    for (const [name, value] of Object.entries(changes) as [K, string | null][]) {
      if (value) params.set(name, value);
      else params.delete(name);
    }
    const query = params.toString();
    router.replace(query ? `${pathname}?${query}` : pathname, { scroll: false });
  }
  return [values, set];
}

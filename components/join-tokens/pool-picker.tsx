'use client';

import { Picker } from '@/components/ui/picker';
import type { Pool } from '@/lib/api-types';

interface PoolPickerProps {
  /** Live bcd pools only: the ones a join token can admit into. */
  pools: Pool[];
  siteNames: Map<string, string>;
  value: string;
  onChange: (poolId: string) => void;
}

/** The pool whose tokens the page shows; grouped by site when the tenant has pools in more than one. */
export function PoolPicker({ pools, siteNames, value, onChange }: PoolPickerProps) {
  const bySite = new Map<string, Pool[]>();
  for (const pool of pools) bySite.set(pool.siteId, [...(bySite.get(pool.siteId) ?? []), pool]);
  const option = (pool: Pool) => (
    <option key={pool.id} value={pool.id}>
      {pool.name}
    </option>
  );
  return (
    <Picker label="Pool" value={value} onChange={onChange}>
      {!value && <option value="">Choose a pool…</option>}
      {bySite.size < 2
        ? pools.map(option)
        : [...bySite].map(([siteId, sitePools]) => (
            <optgroup key={siteId} label={`Site ${siteNames.get(siteId) ?? siteId}`}>
              {sitePools.map(option)}
            </optgroup>
          ))}
    </Picker>
  );
}

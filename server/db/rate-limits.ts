import { sql } from 'kysely';
import type { Tx } from './client';
import { typed } from './typed';

// The shared rate limits (`rate_limits`, counted by `rate_limit_hit()`, every instance together), in the typed layer.

/** Counts one hit against `key`: whether it is within `limit` per `windowSeconds`. */
export async function hitRateLimit(db: Tx, key: string, limit: number, windowSeconds: number): Promise<boolean> {
  const { allowed } = await typed(db)
    .selectNoFrom(sql<boolean>`(rate_limit_hit(${key}, ${limit}::integer, make_interval(secs => ${windowSeconds}))).allowed`.as('allowed'))
    .executeTakeFirstOrThrow();
  return allowed;
}

/**
 * Seconds until the window of `key` (`windowSeconds` long) ends, by the database's clock, at least 1; undefined
 * without a row. What a refused hit tells its client to wait.
 */
export async function secondsLeftInWindow(db: Tx, key: string, windowSeconds: number): Promise<number | undefined> {
  const row = await typed(db)
    .selectFrom('rate_limits')
    .select((eb) => {
      const windowEnd = eb(eb.ref('window_start'), '+', sql<Date>`make_interval(secs => ${windowSeconds})`);
      return sql<number>`GREATEST(1, ceil(extract(epoch FROM ${windowEnd} - compute_now())))::integer`.as('seconds');
    })
    .where('key', '=', key)
    .executeTakeFirst();
  return row?.seconds;
}

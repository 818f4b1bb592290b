import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabaseUrl } from '../../test/db';
import { createPgPool } from './pg';
import { sweepRateLimits } from './rate-limit-sweep';

// Rows of rate_limits whose window ended long ago are swept in batches; a live window stays, a row another
// transaction holds is skipped, and two instances sweeping at once both finish.

let pools: pg.Pool[];
const prefix = `sweep-${randomBytes(4).toString('hex')}`;

beforeAll(() => {
  pools = [createPgPool(testDatabaseUrl(), 3), createPgPool(testDatabaseUrl(), 3)];
});
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
});

/** `n` rows of `kind` whose window started `age` ago. */
const rows = (kind: string, n: number, age: string) =>
  pools[0]!.query(
    `INSERT INTO rate_limits (key, window_start, count, suppressed)
     SELECT $1 || ':' || $2 || ':' || i, compute_now() - $4::interval, 5, 0 FROM generate_series(1, $3::int) i`,
    [prefix, kind, n, age],
  );
const left = async () =>
  (await pools[0]!.query<{ key: string }>(`SELECT key FROM rate_limits WHERE key LIKE $1 ORDER BY key`, [`${prefix}:%`])).rows.map((r) =>
    r.key.split(':').slice(1, 2).join(),
  );

describe('the rate-limit sweep', () => {
  it('deletes rows whose window started over an hour ago, in batches, and keeps the rest', async () => {
    await rows('old', 25, '2 hours');
    await rows('recent', 3, '59 minutes');
    await rows('live', 2, '0 seconds');
    expect(await sweepRateLimits(pools[0]!, { batch: 10 })).toBeGreaterThanOrEqual(25);
    expect(await left()).toEqual(['live', 'live', 'recent', 'recent', 'recent']);
  });

  it('skips a row another transaction holds, and two instances sweep at once without loss or error', async () => {
    await rows('held', 1, '3 hours');
    await rows('stale', 40, '3 hours');
    const holder = await pools[1]!.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM rate_limits WHERE key = $1 FOR UPDATE`, [`${prefix}:held:1`]);
      await Promise.all([sweepRateLimits(pools[0]!, { batch: 7 }), sweepRateLimits(pools[1]!, { batch: 7 })]);
      expect((await left()).filter((k) => k !== 'live' && k !== 'recent')).toEqual(['held']);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    await sweepRateLimits(pools[0]!);
    expect((await left()).filter((k) => k !== 'live' && k !== 'recent')).toEqual([]);
  });
});

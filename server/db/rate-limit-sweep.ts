import type pg from 'pg';
import { sweepGatewayCalls } from '../gateway-credentials/gateway-calls';
import { logError } from '../log';

// `rate_limits` keeps one row per key (a source address, a site, a refusal reason), and every new address makes
// a new row. A row whose window ended long ago holds nothing a limit still needs (its next hit would start a new
// window anyway), so a sweep deletes those rows, in small batches. Every API instance runs it.

// Plain SQL on the server's pg pool, from each instance's sweeper (docs/decisions/typed-sql.md): `DELETE … WHERE
// ctid IN (… SKIP LOCKED)` batches, each its own short transaction; checked by test/sql-check.test.ts.

/** Older than every window kept in `rate_limits` (the longest is a minute), so a sweep never ends a live one. */
const RATE_LIMIT_RETENTION = '1 hour';
const RATE_LIMIT_SWEEP_BATCH = 1_000;
/** How often each instance sweeps. */
const RATE_LIMIT_SWEEP_MS = 5 * 60_000;

/**
 * One batch: up to $2 rows whose window started more than $1 ago. Rows another transaction holds (a hit being
 * counted, another instance's sweep) are skipped, never waited for.
 */
const SWEEP_RATE_LIMITS = `
DELETE FROM rate_limits WHERE ctid IN (
  SELECT ctid FROM rate_limits WHERE window_start < compute_now() - $1::interval LIMIT $2 FOR UPDATE SKIP LOCKED)`;

/**
 * Deletes the rows of `rate_limits` whose window started more than `olderThan` ago, `batch` rows per statement
 * (each its own short transaction), until a batch finds fewer; the number deleted.
 */
export async function sweepRateLimits(pool: pg.Pool, options: { olderThan?: string; batch?: number } = {}): Promise<number> {
  const batch = options.batch ?? RATE_LIMIT_SWEEP_BATCH;
  let deleted = 0;
  for (;;) {
    const result = await pool.query(SWEEP_RATE_LIMITS, [options.olderThan ?? RATE_LIMIT_RETENTION, batch]);
    deleted += result.rowCount ?? 0;
    if ((result.rowCount ?? 0) < batch) return deleted;
  }
}

/**
 * Runs {@link sweepRateLimits}, and the sweep of gateway credentials calls not seen for a day, every `intervalMs`
 * until the returned stop is called; failures are logged.
 */
export function startRateLimitSweeper(pool: pg.Pool, intervalMs = RATE_LIMIT_SWEEP_MS): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    sweepRateLimits(pool)
      .catch((error) => logError('rate limit sweep failed', error))
      .then(() => sweepGatewayCalls(pool))
      .catch((error) => logError('gateway credentials calls sweep failed', error))
      .finally(() => (running = false));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

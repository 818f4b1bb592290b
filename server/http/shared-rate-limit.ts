import type pg from 'pg';
import { logLimited } from '../log';
import { HIT_RATE_LIMIT } from './rate-limit-sql';

/** A request rate limit: at most `limit` calls per `windowSeconds` per subject, under keys `<keyPrefix>:<subject>`. */
export interface RateLimitRule {
  keyPrefix: string;
  limit: number;
  windowSeconds: number;
}

export type RateVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** How many refused subjects a process remembers (past it, the oldest are forgotten and ask the database again). */
const MAX_REMEMBERED = 10_000;

/**
 * A request rate limit shared by every instance: each call is one `rate_limit_hit()` on the `rate_limits` row of
 * its subject, so N instances together allow `limit` per window, not N × `limit`. A subject refused once is
 * remembered by this process until its window ends, so a flood past the limit costs the database one round trip
 * per window and process, not one per call. When the database cannot answer, the call is let through (and a
 * line is logged): the limits guard against abuse, and the paths they guard need no database to answer. Rows
 * whose window ended are swept by every instance's rate-limit sweeper (server/db/rate-limit-sweep.ts).
 */
export class SharedRateLimit {
  private readonly refusedUntil = new Map<string, number>();

  constructor(
    private readonly pool: pg.Pool,
    readonly rule: RateLimitRule,
    private readonly now: () => number = Date.now,
  ) {}

  async hit(subject: string): Promise<RateVerdict> {
    const t = this.now();
    const until = this.refusedUntil.get(subject);
    if (until !== undefined) {
      if (until > t) return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((until - t) / 1000)) };
      this.refusedUntil.delete(subject);
    }
    const window = `${this.rule.windowSeconds} seconds`;
    let row: { allowed: boolean; retry_after: number } | undefined;
    try {
      row = (await this.pool.query(HIT_RATE_LIMIT, [`${this.rule.keyPrefix}:${subject}`, this.rule.limit, window])).rows[0];
    } catch {
      logLimited(`rate-limit:${this.rule.keyPrefix}`, `the ${this.rule.keyPrefix} rate limit could not be read; the call was let through`);
      return { allowed: true };
    }
    if (!row || row.allowed) return { allowed: true };
    const retryAfterSeconds = Math.min(this.rule.windowSeconds, Math.max(1, row.retry_after));
    if (this.refusedUntil.size >= MAX_REMEMBERED) this.refusedUntil.delete(this.refusedUntil.keys().next().value!);
    this.refusedUntil.set(subject, t + retryAfterSeconds * 1000);
    return { allowed: false, retryAfterSeconds };
  }
}

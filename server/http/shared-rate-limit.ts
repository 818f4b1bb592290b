import { isIP } from 'node:net';
import type pg from 'pg';
import { logLimited } from '../log';
import { HIT_RATE_LIMIT, SWEEP_RATE_LIMITS } from './rate-limit-sql';

/** A request rate limit: at most `limit` calls per `windowSeconds` per subject, under keys `<keyPrefix>:<subject>`. */
export interface RateLimitRule {
  keyPrefix: string;
  limit: number;
  windowSeconds: number;
}

export type RateVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** How many refused subjects a process remembers (past it, the oldest are forgotten and ask the database again). */
const MAX_REMEMBERED = 10_000;
/** How often (at most) one process deletes the limit's rows whose window ended. */
const SWEEP_EVERY_MS = 60_000;

/**
 * The subject a client address is limited under: an IPv4 address as it is, an IPv6 address by its /64 (one
 * host usually holds a whole /64, so counting single IPv6 addresses would limit nothing).
 */
export function addressSubject(address: string): string {
  if (isIP(address) !== 6) return address;
  const [head = '', tail] = address.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

/**
 * A request rate limit shared by every instance: each call is one `rate_limit_hit()` on the `rate_limits` row of
 * its subject, so N instances together allow `limit` per window, not N × `limit`. A subject refused once is
 * remembered by this process until its window ends, so a flood past the limit costs the database one round trip
 * per window and process, not one per call. When the database cannot answer, the call is let through (and a
 * line is logged): the limits guard against abuse, and the paths they guard need no database to answer.
 */
export class SharedRateLimit {
  private readonly refusedUntil = new Map<string, number>();
  private lastSweep = 0;

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
    if (t - this.lastSweep >= SWEEP_EVERY_MS) {
      this.lastSweep = t;
      this.pool.query(SWEEP_RATE_LIMITS, [`${this.rule.keyPrefix}:`, window]).catch(() => {});
    }
    if (!row || row.allowed) return { allowed: true };
    const retryAfterSeconds = Math.min(this.rule.windowSeconds, Math.max(1, row.retry_after));
    if (this.refusedUntil.size >= MAX_REMEMBERED) this.refusedUntil.delete(this.refusedUntil.keys().next().value!);
    this.refusedUntil.set(subject, t + retryAfterSeconds * 1000);
    return { allowed: false, retryAfterSeconds };
  }
}

import { DomainError } from '../../protocol/errors';
import { MAX_NODE_CERT_TTL_SECONDS, MAX_RAMDISK_CERT_TTL_SECONDS } from '../pki/issuance/node-certificate';

/** The renewal window: an agent renews at 55–65% of its certificate's life, so the shortest gap is 55% of it. */
const EARLIEST_RENEWAL_FRACTION = 0.55;
/** How many times the schedule's rate a node may renew (retries after a lost answer, a restart, a clock step). */
const HEADROOM = 4;
/** Never fewer per hour than this, whatever the lifetime. */
const FLOOR = 12;

/**
 * Certificates one node may be issued per hour, counted from the `node_certs` rows that issuance already writes
 * (its join's and its renewals'), so the limit costs no write of its own. `BETTER_COMPUTE_RENEWALS_PER_NODE_PER_HOUR`
 * (1 to 100,000) sets it; by default it is {@link HEADROOM} times the rate the agents' schedule asks for with the
 * shortest lifetime issued (the configured one, or a ramdisk's 2 h), at least {@link FLOOR}: 12 with the default
 * 24 h lifetime, 220 with a 120 s one.
 *
 * @throws DomainError INVALID_CONFIG for a value out of range (checked at start).
 */
export function renewalsPerNodePerHour(env: Record<string, string | undefined>, certTtlSeconds = MAX_NODE_CERT_TTL_SECONDS): number {
  const raw = env.BETTER_COMPUTE_RENEWALS_PER_NODE_PER_HOUR;
  if (raw !== undefined && raw !== '') {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 100_000)
      throw new DomainError(
        'INVALID_CONFIG',
        `BETTER_COMPUTE_RENEWALS_PER_NODE_PER_HOUR must be a whole number from 1 to 100000, not ${raw}`,
      );
    return n;
  }
  const shortest = Math.min(certTtlSeconds, MAX_RAMDISK_CERT_TTL_SECONDS);
  return Math.max(FLOOR, HEADROOM * Math.ceil(3600 / (EARLIEST_RENEWAL_FRACTION * shortest)));
}

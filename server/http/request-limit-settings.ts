import { DomainError } from '../../protocol/errors';

type Env = Record<string, string | undefined>;

function bounded(env: Env, name: string, min: number, max: number, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new DomainError('INVALID_CONFIG', `${name} must be a whole number from ${min} to ${max}, not ${raw}`);
  }
  return n;
}

/**
 * The settings, checked at start (startup-config.ts):
 * - `BETTER_COMPUTE_DOWNLOADS_MAX_CONCURRENT` (1 to 10,000, default 64): bcd downloads one process streams at once.
 * - `BETTER_COMPUTE_DOWNLOADS_PER_ADDRESS` (1 to 100,000, default 120): downloads (and HEADs) per client address
 *   per minute, all instances together. Generous, so that a rack behind one NAT address still installs.
 * - `BETTER_COMPUTE_DOWNLOADS_IDLE_SECONDS` (1 to 3,600, default 30): a download that moves no byte this long is closed.
 * - `BETTER_COMPUTE_WELL_KNOWN_PER_ADDRESS` (1 to 100,000, default 600): well-known documents per client address
 *   per minute, all API instances together; each gateway process applies the same number on its own.
 */
export function requestLimitSettings(env: Env = process.env) {
  return {
    downloads: {
      maxConcurrent: bounded(env, 'BETTER_COMPUTE_DOWNLOADS_MAX_CONCURRENT', 1, 10_000, 64),
      perAddress: bounded(env, 'BETTER_COMPUTE_DOWNLOADS_PER_ADDRESS', 1, 100_000, 120),
      idleMs: bounded(env, 'BETTER_COMPUTE_DOWNLOADS_IDLE_SECONDS', 1, 3_600, 30) * 1000,
    },
    wellKnown: { perAddress: bounded(env, 'BETTER_COMPUTE_WELL_KNOWN_PER_ADDRESS', 1, 100_000, 600) },
  };
}

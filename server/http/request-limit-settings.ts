import { wholeNumberSetting } from './whole-number-setting';

type Env = Record<string, string | undefined>;

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
      maxConcurrent: wholeNumberSetting(env, 'BETTER_COMPUTE_DOWNLOADS_MAX_CONCURRENT', 1, 10_000, 64),
      perAddress: wholeNumberSetting(env, 'BETTER_COMPUTE_DOWNLOADS_PER_ADDRESS', 1, 100_000, 120),
      idleMs: wholeNumberSetting(env, 'BETTER_COMPUTE_DOWNLOADS_IDLE_SECONDS', 1, 3_600, 30) * 1000,
    },
    wellKnown: { perAddress: wholeNumberSetting(env, 'BETTER_COMPUTE_WELL_KNOWN_PER_ADDRESS', 1, 100_000, 600) },
  };
}

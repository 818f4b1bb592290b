import { DEFAULT_NEW_REQUEST_LIMITS, type NewRequestLimits } from '../join/request-admission';

const MAX = 1_000_000;

function perMinute(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > MAX) throw new Error(`${name} must be a whole number from 1 to ${MAX}, not ${value}`);
  return n;
}

/**
 * The new-join-request rate limits every deferring attestor (discovery, tpm) shares, per minute:
 * BETTER_COMPUTE_JOIN_REQUESTS_PER_ADDRESS (per source address, default 20) and
 * BETTER_COMPUTE_JOIN_REQUESTS_PER_SITE (per site, default 300), and the challenges issued without a token (the
 * first round of a challenge round: tpm and x509pop round one) per source address,
 * BETTER_COMPUTE_CHALLENGES_PER_ADDRESS (default 60), 1 to 1,000,000 each.
 *
 * @throws Error naming the variable when a value is out of range.
 */
export function newRequestLimitsFromEnv(env: Record<string, string | undefined> = process.env): NewRequestLimits {
  return {
    ...DEFAULT_NEW_REQUEST_LIMITS,
    perAddress: perMinute(env, 'BETTER_COMPUTE_JOIN_REQUESTS_PER_ADDRESS', DEFAULT_NEW_REQUEST_LIMITS.perAddress),
    perSite: perMinute(env, 'BETTER_COMPUTE_JOIN_REQUESTS_PER_SITE', DEFAULT_NEW_REQUEST_LIMITS.perSite),
    challengesPerAddress: perMinute(env, 'BETTER_COMPUTE_CHALLENGES_PER_ADDRESS', DEFAULT_NEW_REQUEST_LIMITS.challengesPerAddress),
  };
}

import type pg from 'pg';
import { DownloadGate } from '../downloads/gate';
import { requestLimitSettings } from './request-limit-settings';
import { SharedRateLimit, type RateLimitRule } from './shared-rate-limit';

type Env = Record<string, string | undefined>;

/** The request limits of the public paths a server process answers before Next (agent-endpoints.ts). */
export interface RequestLimits {
  downloads: DownloadGate;
  wellKnown: SharedRateLimit;
}

/** Tests: limits of their own (small numbers, keys no other test shares). */
export interface RequestLimitOverrides {
  downloads?: Partial<RateLimitRule> & { maxConcurrent?: number; idleMs?: number };
  wellKnown?: Partial<RateLimitRule>;
}

/** The process's request limits over `pool` (the composition root builds them once). */
export function createRequestLimits(pool: pg.Pool, env: Env, overrides: RequestLimitOverrides = {}): RequestLimits {
  const settings = requestLimitSettings(env);
  const d = overrides.downloads ?? {};
  const downloads = new DownloadGate(
    new SharedRateLimit(pool, {
      keyPrefix: d.keyPrefix ?? 'downloads',
      limit: d.limit ?? settings.downloads.perAddress,
      windowSeconds: d.windowSeconds ?? 60,
    }),
    { maxConcurrent: d.maxConcurrent ?? settings.downloads.maxConcurrent, idleMs: d.idleMs ?? settings.downloads.idleMs },
  );
  const w = overrides.wellKnown ?? {};
  const wellKnown = new SharedRateLimit(pool, {
    keyPrefix: w.keyPrefix ?? 'well-known',
    limit: w.limit ?? settings.wellKnown.perAddress,
    windowSeconds: w.windowSeconds ?? 60,
  });
  return { downloads, wellKnown };
}

import { wholeNumberSetting } from '../http/whole-number-setting';

/** How deliveries are made, retried and given up on; every value has an environment variable (configuration.md). */
export interface WebhookSettings {
  /** Deliver to loopback, private, link-local and other non-public addresses (tests, labs). */
  allowPrivate: boolean;
  /** The first retry's delay; each further one doubles, up to `retryMaxMs`, each with up to 50% jitter off. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** A delivery is retried until this long after it was first due (or redelivered), then marked failed. */
  retryWindowMs: number;
  /** A subscription whose deliveries failed without a success for this long (and `disableMinFailures` times) is disabled. */
  disableAfterMs: number;
  disableMinFailures: number;
  /** One attempt's bound: connect, send, status and the capped body. */
  timeoutMs: number;
  /** How often every instance looks for due deliveries when no NOTIFY woke it (retries come due this way). */
  sweepMs: number;
  /** Deliveries in flight per instance. */
  concurrency: number;
  /** The most of a receiver's answer that is read (and the first 256 bytes of it kept as the error). */
  maxResponseBytes: number;
}

export const DEFAULT_WEBHOOK_SETTINGS: Readonly<WebhookSettings> = {
  allowPrivate: false,
  retryBaseMs: 5_000,
  retryMaxMs: 3_600_000,
  retryWindowMs: 86_400_000,
  disableAfterMs: 86_400_000,
  disableMinFailures: 5,
  timeoutMs: 10_000,
  sweepMs: 1_000,
  concurrency: 16,
  maxResponseBytes: 64 * 1024,
};

const NUMERIC: [keyof WebhookSettings, string, number, number][] = [
  ['retryBaseMs', 'BETTER_COMPUTE_WEBHOOK_RETRY_BASE_MS', 1, 3_600_000],
  ['retryMaxMs', 'BETTER_COMPUTE_WEBHOOK_RETRY_MAX_MS', 1, 86_400_000],
  ['retryWindowMs', 'BETTER_COMPUTE_WEBHOOK_RETRY_WINDOW_MS', 1_000, 7 * 86_400_000],
  ['disableAfterMs', 'BETTER_COMPUTE_WEBHOOK_DISABLE_AFTER_MS', 0, 30 * 86_400_000],
  ['disableMinFailures', 'BETTER_COMPUTE_WEBHOOK_DISABLE_MIN_FAILURES', 1, 1_000_000],
  ['timeoutMs', 'BETTER_COMPUTE_WEBHOOK_TIMEOUT_MS', 100, 60_000],
  ['sweepMs', 'BETTER_COMPUTE_WEBHOOK_SWEEP_MS', 50, 600_000],
  ['concurrency', 'BETTER_COMPUTE_WEBHOOK_CONCURRENCY', 1, 256],
];

/** True when BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE is `true` (or `1`). */
export function allowsPrivateTargets(env: Record<string, string | undefined> = process.env): boolean {
  return ['true', '1'].includes((env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE ?? '').toLowerCase());
}

/**
 * The settings from the environment, defaults for what is unset.
 *
 * @throws DomainError INVALID_CONFIG naming the variable that is not a whole number in its range.
 */
export function webhookSettingsFromEnv(env: Record<string, string | undefined> = process.env): WebhookSettings {
  const settings: WebhookSettings = { ...DEFAULT_WEBHOOK_SETTINGS, allowPrivate: allowsPrivateTargets(env) };
  for (const [key, name, min, max] of NUMERIC) (settings[key] as number) = wholeNumberSetting(env, name, min, max, settings[key] as number);
  return settings;
}

/** The delay before attempt `attempt + 1` after `attempt` failed ones: base·2^(attempt-1), capped, minus up to half at random. */
export function retryDelayMs(settings: Pick<WebhookSettings, 'retryBaseMs' | 'retryMaxMs'>, attempt: number, random = Math.random): number {
  const full = Math.min(settings.retryMaxMs, settings.retryBaseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 40));
  return Math.round(full * (1 - random() / 2));
}

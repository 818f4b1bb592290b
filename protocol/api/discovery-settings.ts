import { z } from 'zod';

export const DISCOVERY_APPROVALS = ['unknown-machines', 'always'] as const;

/** Bounds of a site's cap on pending join requests (`maxPendingRequests`). */
export const MAX_PENDING_REQUESTS = { min: 1, max: 100_000, default: 10_000 } as const;

/** How long a site's join request waits for a decision (discovery and tpm alike): 60 s to 30 days, a day by default. */
export const pendingTtlSecondsSchema = z
  .number()
  .int()
  .min(60)
  .max(30 * 86_400)
  .default(86_400);

/**
 * A site's `discovery` settings; absent keys take the defaults (`unknown-machines`, 86,400 seconds, at most
 * 10,000 pending requests). `maxPendingRequests` is the site's cap on pending requests of every attestor: a full
 * queue refuses new machines (`discovery:queue-full`, `tpm:queue-full`) until one is decided.
 */
export const discoverySettingsSchema = z.strictObject({
  approval: z.enum(DISCOVERY_APPROVALS).default('unknown-machines'),
  pendingTtlSeconds: pendingTtlSecondsSchema,
  maxPendingRequests: z.number().int().min(MAX_PENDING_REQUESTS.min).max(MAX_PENDING_REQUESTS.max).default(MAX_PENDING_REQUESTS.default),
});
export type DiscoverySettings = z.output<typeof discoverySettingsSchema>;

/** The settings stored on a site row, defaults filled in; an unreadable value reads as the defaults. */
export function discoverySettings(stored: unknown): DiscoverySettings {
  const parsed = discoverySettingsSchema.safeParse(stored ?? {});
  return parsed.success ? parsed.data : discoverySettingsSchema.parse({});
}

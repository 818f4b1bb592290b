import { z } from 'zod';

export const DISCOVERY_APPROVALS = ['unknown-machines', 'always'] as const;

/** A site's `discovery` settings; absent keys take the defaults (`unknown-machines`, 86,400 seconds). */
export const discoverySettingsSchema = z.strictObject({
  approval: z.enum(DISCOVERY_APPROVALS).default('unknown-machines'),
  pendingTtlSeconds: z.number().int().min(60).max(30 * 86_400).default(86_400),
});
export type DiscoverySettings = z.output<typeof discoverySettingsSchema>;

/** The settings stored on a site row, defaults filled in; an unreadable value reads as the defaults. */
export function discoverySettings(stored: unknown): DiscoverySettings {
  const parsed = discoverySettingsSchema.safeParse(stored ?? {});
  return parsed.success ? parsed.data : discoverySettingsSchema.parse({});
}

/** What a discovery token's boot step saw, kept on the token row and copied onto its join request. */
export interface DiscoveryBootInfo {
  ip?: string | null;
  workflowId?: string | null;
  vouchedBy?: string | null;
  bootLeaseEpoch?: number | null;
}

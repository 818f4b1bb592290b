// The settings' schema lives in protocol/ (the site record the API answers carries them).
import { discoverySettingsSchema, type DiscoverySettings } from '../../protocol/api/discovery-settings';

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

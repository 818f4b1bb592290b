import { z } from 'zod';
import { discoverySettingsSchema } from './discovery-settings';
import { tpmSiteSettingsSchema } from './tpm-settings';

export const SITE_KINDS = ['platform', 'custom'] as const;

/** A site as the API answers it (`sites.*`). */
export const siteRecord = z.object({
  id: z.string(),
  tenantId: z.string(),
  name: z.string(),
  kind: z.enum(SITE_KINDS),
  createdAt: z.string(),
  archivedAt: z.string().nullable(),
  /** The discovery attestor's settings for this site, defaults filled in. */
  discovery: discoverySettingsSchema,
  /**
   * How many different principals must approve a join request of this site before it admits: 1, or 2 for
   * two-person approval (the first approval is recorded and the request stays pending until a second one).
   */
  requiredApprovals: z.union([z.literal(1), z.literal(2)]),
  /** The tpm attestor's settings for this site (enrollment, the EK allow-list), defaults filled in. */
  tpm: tpmSiteSettingsSchema,
});
export type SiteRecord = z.infer<typeof siteRecord>;

export const siteList = z.object({ items: z.array(siteRecord) });

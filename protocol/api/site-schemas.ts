import { z } from 'zod';
import { DISCOVERY_APPROVALS, discoverySettingsSchema, MAX_PENDING_REQUESTS } from './discovery-settings';
import { idOf } from './resource-names';
import { ekHashSchema, tpmSiteSettingsSchema } from './tpm-settings';

export const SITE_KINDS = ['platform', 'custom'] as const;

/** The most live discovery tokens a site may allow its site agents. */
const SITE_AGENT_TOKEN_CAP_MAX = 100_000;

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
  /** How many live discovery tokens the site may hold at once before its site agents' mints are refused. */
  siteAgentTokenCap: z.number().int(),
});
export type SiteRecord = z.infer<typeof siteRecord>;

export const siteList = z.object({ items: z.array(siteRecord) });

/** `sites.update`'s input: what an operator may change on a live site. */
export const updateSiteInput = z.strictObject({
  tenantId: idOf('tnt'),
  siteId: idOf('site'),
  /** The discovery attestor's settings; absent keys keep their current values. */
  discovery: z
    .strictObject({
      approval: z.enum(DISCOVERY_APPROVALS).optional(),
      pendingTtlSeconds: z
        .number()
        .int()
        .min(60, 'must be at least 60 seconds')
        .max(30 * 86_400, 'must be at most 2592000 seconds (30 days)')
        .optional(),
      maxPendingRequests: z
        .number()
        .int()
        .min(MAX_PENDING_REQUESTS.min, `must be at least ${MAX_PENDING_REQUESTS.min}`)
        .max(MAX_PENDING_REQUESTS.max, `must be at most ${MAX_PENDING_REQUESTS.max}`)
        .optional(),
    })
    .optional(),
  /** The tpm attestor's settings; absent keys keep their current values, the allow-list is edited in place. */
  tpm: z
    .strictObject({
      enrollment: z.boolean().optional(),
      pendingTtlSeconds: z
        .number()
        .int()
        .min(60, 'must be at least 60 seconds')
        .max(30 * 86_400, 'must be at most 2592000 seconds (30 days)')
        .optional(),
      addEkHashes: z.array(ekHashSchema).max(1000).optional(),
      removeEkHashes: z.array(ekHashSchema).max(1000).optional(),
    })
    .optional(),
  /** The cap on the site's live discovery tokens that its site agents' mints respect (64 by default). */
  siteAgentTokenCap: z
    .number()
    .int()
    .min(0, 'must be at least 0')
    .max(SITE_AGENT_TOKEN_CAP_MAX, `must be at most ${SITE_AGENT_TOKEN_CAP_MAX}`)
    .optional(),
  /** 2: every join request of the site needs approvals by two different people; 1 (the default): one. */
  requiredApprovals: z.union([z.literal(1), z.literal(2)], { error: 'must be 1 or 2' }).optional(),
});

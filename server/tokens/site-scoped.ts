import { z } from 'zod';
import type { Db } from '../db/client';
import { DomainError } from '../../protocol/errors';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { idOf } from '../../protocol/api/resource-names';
import { isPermanentGlobalMac } from '../../protocol/hardware-claims';
import { invalidMac, issueJoinToken } from './issue';
import { idempotencyKey, ttlSeconds, type CreatedJoinToken } from '../../protocol/api/token-schemas';

/** At most 16 uses for a site token (joining.md "Token roles"). */
const SITE_TOKEN_MAX_USES = 16;

export const createDiscoveryTokenInput = z.strictObject({
  tenantId: idOf('tnt'),
  siteId: idOf('site'),
  mac: z.string().min(1).max(64),
  ip: z.string().min(1).max(64).optional(),
  workflowId: z.string().min(1).max(200).optional(),
  bootLeaseEpoch: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  ttlSeconds: ttlSeconds.default(3600),
  idempotencyKey: idempotencyKey.optional(),
});

export const createSiteTokenInput = z.strictObject({
  tenantId: idOf('tnt'),
  siteId: idOf('site'),
  ttlSeconds: ttlSeconds.default(3600),
  maxUses: z.number().int().min(1).max(SITE_TOKEN_MAX_USES, `must be at most ${SITE_TOKEN_MAX_USES}`).default(1),
  idempotencyKey: idempotencyKey.optional(),
});

/** The caller's site, decided as `compute:sites:manage`; another tenant's or an unknown site is NOT_FOUND. */
async function loadManagedSite(db: Db, principal: Principal, tenantId: string, siteId: string) {
  const owner = await authorize(db, principal, 'compute:sites:manage', resource.site(siteId));
  const site = owner === tenantId ? await db.site.findUnique({ where: { id: siteId } }) : null;
  if (!site) throw new DomainError('NOT_FOUND', `Site ${siteId} not found`);
  if (site.archivedAt) throw new DomainError('INVALID_STATE', `Site ${siteId} is archived: no machine can join it`, { field: 'siteId' });
  return site;
}

/**
 * `discoveryTokens.create`: the site's boot step mints one `discovery` token per PXE lease, single use and
 * bound to the lease's MAC, recording what it saw (`ip`, `workflowId`, `bootLeaseEpoch`) and who vouched
 * (the caller's identity). Decided as `compute:sites:manage` on the site. The bearer token is in this
 * answer only, once.
 */
export async function createDiscoveryToken(
  db: Db,
  principal: Principal,
  input: z.infer<typeof createDiscoveryTokenInput>,
): Promise<CreatedJoinToken> {
  // Checked here so that the error names the field this caller sent (`mac`), not issueJoinToken's `boundMac`.
  if (!isPermanentGlobalMac(input.mac)) throw invalidMac('mac');
  const site = await loadManagedSite(db, principal, input.tenantId, input.siteId);
  return issueSiteToken(db, site, {
    role: 'discovery',
    ttlSeconds: input.ttlSeconds,
    maxUses: 1,
    boundMac: input.mac,
    discovery: {
      ip: input.ip ?? null,
      workflowId: input.workflowId ?? null,
      vouchedBy: principal.actor,
      bootLeaseEpoch: input.bootLeaseEpoch ?? null,
    },
    createdBy: principal.actor,
    idempotencyKey: input.idempotencyKey ?? null,
  });
}

/** `siteTokens.create`: a `site` token admitting `bcd site` agents into one site, at most 16 uses. */
export async function createSiteToken(
  db: Db,
  principal: Principal,
  input: z.infer<typeof createSiteTokenInput>,
): Promise<CreatedJoinToken> {
  const site = await loadManagedSite(db, principal, input.tenantId, input.siteId);
  return issueSiteToken(db, site, {
    role: 'site',
    ttlSeconds: input.ttlSeconds,
    maxUses: input.maxUses,
    createdBy: principal.actor,
    idempotencyKey: input.idempotencyKey ?? null,
  });
}

/** Issues a token of the site and no pool in a transaction of its own; the answer holds the token when one was minted. */
async function issueSiteToken(
  db: Db,
  site: { id: string; ownerTenantId: string },
  input: Omit<Parameters<typeof issueJoinToken>[1], 'tenantId' | 'poolId' | 'siteId'>,
): Promise<CreatedJoinToken> {
  const { record, token } = await db.$transaction((tx) =>
    issueJoinToken(tx, { tenantId: site.ownerTenantId, poolId: null, siteId: site.id, ...input }),
  );
  return token === undefined ? record : { ...record, token };
}

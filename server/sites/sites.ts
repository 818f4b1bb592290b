import { z } from 'zod';
import type { Db } from '../db/client';
import { isUniqueViolation } from '../db/errors';
import { DomainError } from '../../protocol/errors';
import { newId } from '../ids';
import { idOf, resourceName } from '../../protocol/api/resource-names';
import { authorize, projectResource, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { writeAudit } from '../events/publish';
import { siteSettingsOf } from '../join/attestors';
import { SITE_KINDS, type SiteRecord } from '../../protocol/api/site-schemas';

export const createSiteInput = z.strictObject({
  tenantId: idOf('tnt'),
  name: resourceName,
  kind: z.enum(SITE_KINDS).optional(),
});
export const listSitesInput = z.strictObject({ tenantId: idOf('tnt'), includeArchived: z.boolean().optional() });
export const siteRefInput = z.strictObject({ tenantId: idOf('tnt'), siteId: idOf('site') });

type SiteRow = {
  id: string;
  ownerTenantId: string;
  name: string;
  kind: string;
  createdAt: Date;
  archivedAt: Date | null;
  discovery: unknown;
  requiredApprovals: number;
  siteAgentTokenCap: number;
  tpm: unknown;
};
export const toSiteRecord = (s: SiteRow): SiteRecord => ({
  id: s.id,
  tenantId: s.ownerTenantId,
  name: s.name,
  kind: s.kind as SiteRecord['kind'],
  createdAt: s.createdAt.toISOString(),
  archivedAt: s.archivedAt?.toISOString() ?? null,
  // Each attestor's settings of the site (`discovery`, `tpm`), read by the attestor that registered them.
  ...(siteSettingsOf(s) as Pick<SiteRecord, 'discovery' | 'tpm'>),
  requiredApprovals: s.requiredApprovals >= 2 ? 2 : 1,
  siteAgentTokenCap: s.siteAgentTokenCap,
});

/**
 * Creates a site owned by the tenant. Only the root tenant runs `platform` sites (its own capacity);
 * every other tenant's sites are `custom`, which is also the default outside the root tenant.
 */
export async function createSite(db: Db, principal: Principal, input: z.infer<typeof createSiteInput>): Promise<SiteRecord> {
  await authorize(db, principal, 'compute:sites:manage', resource.tenant(input.tenantId));
  const tenant = await db.tenant.findUniqueOrThrow({ where: { id: input.tenantId } });
  const kind = input.kind ?? (tenant.isRoot ? 'platform' : 'custom');
  if (kind === 'platform' && !tenant.isRoot) {
    throw new DomainError('INVALID_ARGUMENT', 'kind: only the root tenant can create platform sites', { field: 'kind' });
  }
  try {
    return await db.$transaction(async (tx) => {
      const site = await tx.site.create({ data: { id: newId('site'), ownerTenantId: input.tenantId, name: input.name, kind } });
      await projectResource(tx, resource.site(site.id), input.tenantId);
      await writeAudit(tx, {
        tenantId: input.tenantId,
        actor: principal.actor,
        action: 'site.created',
        resource: resource.site(site.id),
        data: { name: site.name, kind },
      });
      return toSiteRecord(site);
    });
  } catch (error) {
    if (isUniqueViolation(error))
      throw new DomainError('ALREADY_EXISTS', `A site named ${input.name} already exists in this tenant`, { field: 'name' });
    throw error;
  }
}

export async function listSites(db: Db, principal: Principal, input: z.infer<typeof listSitesInput>): Promise<SiteRecord[]> {
  await authorize(db, principal, 'compute:sites:read', resource.tenant(input.tenantId));
  const rows = await db.site.findMany({
    where: { ownerTenantId: input.tenantId, ...(input.includeArchived ? {} : { archivedAt: null }) },
    orderBy: { createdAt: 'asc' },
  });
  return rows.map(toSiteRecord);
}

/** Loads a site the tenant owns, checking ownership again after authorization. */
export async function loadSite(
  db: Db,
  principal: Principal,
  action: 'compute:sites:read' | 'compute:sites:manage',
  input: z.infer<typeof siteRefInput>,
) {
  const owner = await authorize(db, principal, action, resource.site(input.siteId));
  const site = owner === input.tenantId ? await db.site.findUnique({ where: { id: input.siteId } }) : null;
  if (!site) throw new DomainError('NOT_FOUND', `Site ${input.siteId} not found`);
  return site;
}

export async function getSite(db: Db, principal: Principal, input: z.infer<typeof siteRefInput>): Promise<SiteRecord> {
  return toSiteRecord(await loadSite(db, principal, 'compute:sites:read', input));
}

/** Archives a site with no live pools. Archiving twice returns the archived site. */
export async function archiveSite(db: Db, principal: Principal, input: z.infer<typeof siteRefInput>): Promise<SiteRecord> {
  const site = await loadSite(db, principal, 'compute:sites:manage', input);
  if (site.archivedAt) return toSiteRecord(site);
  return db.$transaction(async (tx) => {
    const live = await tx.pool.count({ where: { siteId: site.id, archivedAt: null } });
    if (live > 0) throw new DomainError('INVALID_STATE', `Site ${site.id} still has ${live} live pool(s); archive them first`);
    const archived = await tx.site.update({ where: { id: site.id }, data: { archivedAt: new Date() } });
    await writeAudit(tx, {
      tenantId: site.ownerTenantId,
      actor: principal.actor,
      action: 'site.archived',
      resource: resource.site(site.id),
    });
    return toSiteRecord(archived);
  });
}

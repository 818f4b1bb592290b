import { z } from 'zod';
import type { Db, Tx } from '../db/client';
import { isUniqueViolation } from '../db/errors';
import { DomainError } from '../../protocol/errors';
import { newId } from '../ids';
import { resourceName } from '../../protocol/api/resource-names';
import { authorize, projectResource, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import type { TenantRecord } from '../../protocol/api/tenant-schemas';
import { writeAudit } from '../events/publish';

export const ROOT_TENANT_NAME = 'root';

export const createTenantInput = z.strictObject({ name: resourceName });

const toRecord = (t: { id: string; name: string; isRoot: boolean; createdAt: Date }, principal?: Principal): TenantRecord => ({
  id: t.id,
  name: t.name,
  isRoot: t.isRoot,
  createdAt: t.createdAt.toISOString(),
  isMember: principal?.memberships.has(t.id) ?? false,
  role: principal?.memberships.get(t.id) ?? null,
});

export async function getRootTenant(db: Tx) {
  return db.tenant.findFirst({ where: { isRoot: true } });
}

/** Creates the root tenant if there is none; safe to call from two instances at once. */
export async function ensureRootTenant(db: Db): Promise<TenantRecord> {
  const existing = await getRootTenant(db);
  if (existing) return toRecord(existing);
  try {
    return await db.$transaction(async (tx) => {
      const tenant = await tx.tenant.create({ data: { id: newId('tnt'), name: ROOT_TENANT_NAME, isRoot: true } });
      await projectResource(tx, resource.tenant(tenant.id), tenant.id);
      return toRecord(tenant);
    });
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    return toRecord((await getRootTenant(db))!);
  }
}

/**
 * Creates a tenant. Decided as `compute:tenants:manage` on the root tenant. The creator gains no membership:
 * root admins create tenants and bootstrap them (the first admin's invitation, or the first API key), but
 * act inside a tenant only if they belong to it like anyone else.
 */
export async function createTenant(db: Db, principal: Principal, input: z.infer<typeof createTenantInput>): Promise<TenantRecord> {
  const root = await getRootTenant(db);
  if (!root) throw new DomainError('INVALID_CONFIG', 'The root tenant does not exist yet');
  if (!principal.memberships.has(root.id)) {
    throw new DomainError('ACCESS_DENIED', 'Only admins of the root tenant create tenants');
  }
  await authorize(db, principal, 'compute:tenants:manage', resource.tenant(root.id));
  try {
    return await db.$transaction(async (tx) => {
      const tenant = await tx.tenant.create({ data: { id: newId('tnt'), name: input.name } });
      await projectResource(tx, resource.tenant(tenant.id), tenant.id);
      await writeAudit(tx, {
        tenantId: root.id,
        actor: principal.actor,
        action: 'tenant.created',
        resource: resource.tenant(tenant.id),
        data: { name: tenant.name },
      });
      return toRecord(tenant, principal);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new DomainError('ALREADY_EXISTS', `A tenant named ${input.name} already exists`, { field: 'name' });
    throw error;
  }
}

/**
 * The tenants the caller belongs to; root tenant admins see every tenant (to create its API keys), but act
 * only in those they belong to, which `isMember` marks.
 */
export async function listTenants(db: Db, principal: Principal): Promise<TenantRecord[]> {
  const root = await getRootTenant(db);
  const isRootAdmin = !!root && principal.memberships.get(root.id) === 'admin';
  const rows = await db.tenant.findMany({
    where: isRootAdmin ? {} : { id: { in: [...principal.memberships.keys()] } },
    orderBy: { createdAt: 'asc' },
  });
  return rows.map((row) => toRecord(row, principal));
}

/** Resolves a tenant given by id (`tnt_…`) or name, among those the caller may see. */
export async function resolveTenant(db: Tx, ref: string): Promise<{ id: string; name: string; isRoot: boolean } | null> {
  return db.tenant.findFirst({ where: ref.startsWith('tnt_') ? { id: ref } : { name: ref } });
}

import { z } from 'zod';
import type { Db } from '../db/client';
import { DomainError } from '../errors';
import { newId } from '../ids';
import { idOf } from '../names';
import { authorize, resource } from '../authz/authorize';
import { ROLES, type Role } from '../authz/permissions';
import { principalOf, type Principal } from '../authz/principal';
import { writeAudit } from '../events/publish';
import { getRootTenant } from '../tenants/tenants';
import { hashTokenSecret, newTokenSecret, tokenSecretMatches } from '../tokens/secret';

export const createApiKeyInput = z.strictObject({
  tenantId: idOf('tnt'),
  role: z.enum(ROLES),
  name: z.string().trim().min(1).max(100),
});
export const listApiKeysInput = z.strictObject({ tenantId: idOf('tnt'), includeRevoked: z.boolean().optional() });
export const revokeApiKeyInput = z.strictObject({ tenantId: idOf('tnt'), apiKeyId: idOf('ak') });

export const apiKeyRecord = z.object({
  id: z.string(),
  tenantId: z.string(),
  role: z.enum(ROLES),
  name: z.string(),
  createdBy: z.string(),
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
});
export type ApiKeyRecord = z.infer<typeof apiKeyRecord>;

const KEY_PATTERN = /^bcak_(ak_[0-9a-z]{26})\.([A-Za-z0-9_-]{43})$/;

type Row = { id: string; tenantId: string; role: string; name: string; createdBy: string; createdAt: Date; revokedAt: Date | null };
const toRecord = (k: Row): ApiKeyRecord => ({
  id: k.id,
  tenantId: k.tenantId,
  role: k.role as Role,
  name: k.name,
  createdBy: k.createdBy,
  createdAt: k.createdAt.toISOString(),
  revokedAt: k.revokedAt?.toISOString() ?? null,
});

/**
 * Mints a key `bcak_<id>.<secret>`; only the SHA-256 of the secret is stored and the key is shown once. The
 * secret is made, hashed and checked as a join token's is (tokens/secret).
 */
export async function insertApiKey(
  db: Db,
  input: z.infer<typeof createApiKeyInput>,
  createdBy: string,
  firstKeyOf?: { rootTenantId: string; refusal: unknown },
) {
  const id = newId('ak');
  const secret = newTokenSecret();
  return db.$transaction(async (tx) => {
    if (firstKeyOf) {
      // Only a tenant nobody can act in yet takes a key from outside; the row lock makes two such
      // requests take turns, so exactly one first key is minted.
      await tx.$queryRaw`SELECT id FROM tenants WHERE id = ${input.tenantId} FOR UPDATE`;
      const [keys, members] = await Promise.all([
        tx.apiKey.count({ where: { tenantId: input.tenantId } }),
        tx.membership.count({ where: { tenantId: input.tenantId } }),
      ]);
      if (keys + members > 0) throw firstKeyOf.refusal;
      await writeAudit(tx, { tenantId: firstKeyOf.rootTenantId, actor: createdBy, action: 'api-key.created-for-tenant', resource: `compute-api-key/${id}`, data: { tenantId: input.tenantId, role: input.role } });
    }
    const row = await tx.apiKey.create({ data: { id, tenantId: input.tenantId, role: input.role, name: input.name, secretHash: hashTokenSecret(secret), createdBy } });
    await writeAudit(tx, { tenantId: input.tenantId, actor: createdBy, action: 'api-key.created', resource: `compute-api-key/${id}`, data: { role: input.role, name: input.name } });
    return { ...toRecord(row), key: `bcak_${id}.${secret}` };
  });
}

/**
 * Creates an API key for a tenant: `compute:api-keys:manage` on that tenant. A root tenant admin may also
 * mint the FIRST key of a tenant that has no members and no keys yet (bootstrapping it); after that the
 * tenant's own admins decide, and the root admin gets NOT_FOUND like any outsider.
 */
export async function createApiKey(db: Db, principal: Principal, input: z.infer<typeof createApiKeyInput>) {
  try {
    await authorize(db, principal, 'compute:api-keys:manage', resource.tenant(input.tenantId));
  } catch (error) {
    const root = await getRootTenant(db);
    if (!root || root.id === input.tenantId || principal.memberships.get(root.id) !== 'admin') throw error;
    if (!(await db.tenant.findUnique({ where: { id: input.tenantId } }))) throw error;
    return insertApiKey(db, input, principal.actor, { rootTenantId: root.id, refusal: error });
  }
  return insertApiKey(db, input, principal.actor);
}

export async function listApiKeys(db: Db, principal: Principal, input: z.infer<typeof listApiKeysInput>): Promise<ApiKeyRecord[]> {
  await authorize(db, principal, 'compute:api-keys:read', resource.tenant(input.tenantId));
  const rows = await db.apiKey.findMany({
    where: { tenantId: input.tenantId, ...(input.includeRevoked ? {} : { revokedAt: null }) },
    orderBy: { createdAt: 'asc' },
  });
  return rows.map(toRecord);
}

/** Revokes a key at once; revoking twice is not an error. */
export async function revokeApiKey(db: Db, principal: Principal, input: z.infer<typeof revokeApiKeyInput>): Promise<ApiKeyRecord> {
  await authorize(db, principal, 'compute:api-keys:manage', resource.tenant(input.tenantId));
  const key = await db.apiKey.findUnique({ where: { id: input.apiKeyId } });
  if (!key || key.tenantId !== input.tenantId) throw new DomainError('NOT_FOUND', `API key ${input.apiKeyId} not found`);
  if (key.revokedAt) return toRecord(key);
  return db.$transaction(async (tx) => {
    const row = await tx.apiKey.update({ where: { id: key.id }, data: { revokedAt: new Date() } });
    await writeAudit(tx, { tenantId: key.tenantId, actor: principal.actor, action: 'api-key.revoked', resource: `compute-api-key/${key.id}` });
    return toRecord(row);
  });
}

/** The principal of a bearer API key, or null for anything that is not a live key of ours. */
export async function authenticateApiKey(db: Db, bearer: string): Promise<Principal | null> {
  const match = KEY_PATTERN.exec(bearer);
  if (!match) return null;
  const key = await db.apiKey.findUnique({ where: { id: match[1] } });
  if (!key || key.revokedAt) return null;
  if (!tokenSecretMatches(key.secretHash, match[2]!)) return null;
  return principalOf('api-key', key.id, [[key.tenantId, key.role as Role]]);
}

import { z } from 'zod';
import { sql } from 'kysely';
import type { Db } from '../db/client';
import { typed } from '../db/typed';
import { computeNow, lockTenant } from '../operators/shared-sql';
import { DomainError } from '../../protocol/errors';
import { newId } from '../ids';
import { idOf } from '../../protocol/api/resource-names';
import { authorize, resource } from '../authz/authorize';
import { ROLES, type Role } from '../../protocol/api/permissions';
import { principalOf, type Principal } from '../authz/principal';
import { writeAudit } from '../events/publish';
import type { ApiKeyRecord } from '../../protocol/api/api-key-schemas';
import { getRootTenant } from '../tenants/tenants';
import { hashTokenSecret, newTokenSecret, tokenSecretMatches } from '../tokens/secret';

export const createApiKeyInput = z.strictObject({
  tenantId: idOf('tnt'),
  role: z.enum(ROLES),
  name: z.string().trim().min(1).max(100),
  /** How long the key works, 1 hour to 400 days; without it the key lives until revoked. */
  ttlSeconds: z
    .number()
    .int()
    .min(3_600)
    .max(400 * 86_400)
    .optional(),
});
export const listApiKeysInput = z.strictObject({ tenantId: idOf('tnt'), includeRevoked: z.boolean().optional() });
export const revokeApiKeyInput = z.strictObject({ tenantId: idOf('tnt'), apiKeyId: idOf('ak') });

const KEY_PATTERN = /^bcak_(ak_[0-9a-z]{26})\.([A-Za-z0-9_-]{43})$/;

type Row = {
  id: string;
  tenantId: string;
  role: string;
  name: string;
  createdBy: string;
  createdAt: Date;
  revokedAt: Date | null;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
};
type Creators = { emails: ReadonlyMap<string, string>; names: ReadonlyMap<string, string> };
const toRecord = (k: Row, creators: Creators = { emails: new Map(), names: new Map() }): ApiKeyRecord => ({
  id: k.id,
  tenantId: k.tenantId,
  role: k.role as Role,
  name: k.name,
  createdBy: k.createdBy,
  createdByEmail: creators.emails.get(k.createdBy) ?? null,
  createdByName: creators.names.get(k.createdBy) ?? null,
  createdAt: k.createdAt.toISOString(),
  revokedAt: k.revokedAt?.toISOString() ?? null,
  expiresAt: k.expiresAt?.toISOString() ?? null,
  lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
});

/** The emails of the operators among `actors` (`operator:op_…`), so lists name people, not ids. */
async function operatorEmails(db: Db, actors: string[]): Promise<Creators> {
  const ids = [...new Set(actors.filter((a) => a.startsWith('operator:')).map((a) => a.slice('operator:'.length)))];
  if (!ids.length) return { emails: new Map(), names: new Map() };
  const rows = await db.operator.findMany({ where: { id: { in: ids } }, select: { id: true, email: true, name: true } });
  return {
    emails: new Map(rows.map((o) => [`operator:${o.id}`, o.email])),
    names: new Map(rows.map((o) => [`operator:${o.id}`, o.name.trim() || o.email])),
  };
}

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
      await lockTenant(tx, input.tenantId);
      const [keys, members, invitations] = await Promise.all([
        tx.apiKey.count({ where: { tenantId: input.tenantId } }),
        tx.membership.count({ where: { tenantId: input.tenantId } }),
        // A pending first-admin invitation is a way in already: the root admin gets one, not both.
        tx.invitation.count({ where: { tenantId: input.tenantId, acceptedAt: null, revokedAt: null, expiresAt: { gt: new Date() } } }),
      ]);
      if (keys + members + invitations > 0) throw firstKeyOf.refusal;
      await writeAudit(tx, {
        tenantId: firstKeyOf.rootTenantId,
        actor: createdBy,
        action: 'api-key.created-for-tenant',
        resource: `compute-api-key/${id}`,
        data: { tenantId: input.tenantId, role: input.role },
      });
    }
    const expiresAt = input.ttlSeconds
      ? (
          await typed(tx)
            .selectNoFrom(sql<Date>`compute_now() + make_interval(secs => ${input.ttlSeconds})`.as('at'))
            .executeTakeFirstOrThrow()
        ).at
      : null;
    const row = await tx.apiKey.create({
      data: { id, tenantId: input.tenantId, role: input.role, name: input.name, secretHash: hashTokenSecret(secret), createdBy, expiresAt },
    });
    await writeAudit(tx, {
      tenantId: input.tenantId,
      actor: createdBy,
      action: 'api-key.created',
      resource: `compute-api-key/${id}`,
      data: { role: input.role, name: input.name, expiresAt: expiresAt?.toISOString() ?? null },
    });
    return { ...toRecord(row, await operatorEmails(db, [createdBy])), key: `bcak_${id}.${secret}` };
  });
}

/**
 * Creates an API key for a tenant: `compute:api-keys:manage` on that tenant. A root tenant admin may also
 * mint the FIRST key of a tenant that has no members and no keys yet (bootstrapping it); after that the
 * tenant's own admins decide, and the root admin is refused (ACCESS_DENIED, saying why).
 */
export async function createApiKey(db: Db, principal: Principal, input: z.infer<typeof createApiKeyInput>) {
  try {
    await authorize(db, principal, 'compute:api-keys:manage', resource.tenant(input.tenantId));
  } catch (error) {
    const root = await getRootTenant(db);
    if (!root || root.id === input.tenantId || principal.memberships.get(root.id) !== 'admin') throw error;
    const tenant = await db.tenant.findUnique({ where: { id: input.tenantId } });
    if (!tenant) throw error;
    // Root admins see every tenant, so saying why hides nothing from them.
    const refusal = new DomainError(
      'ACCESS_DENIED',
      `Tenant ${tenant.name} already has members or API keys (or a pending invitation): only its own admins create its API keys`,
    );
    return insertApiKey(db, input, principal.actor, { rootTenantId: root.id, refusal });
  }
  return insertApiKey(db, input, principal.actor);
}

export async function listApiKeys(db: Db, principal: Principal, input: z.infer<typeof listApiKeysInput>): Promise<ApiKeyRecord[]> {
  await authorize(db, principal, 'compute:api-keys:read', resource.tenant(input.tenantId));
  const rows = await db.apiKey.findMany({
    where: { tenantId: input.tenantId, ...(input.includeRevoked ? {} : { revokedAt: null }) },
    orderBy: { createdAt: 'asc' },
  });
  const creators = await operatorEmails(
    db,
    rows.map((r) => r.createdBy),
  );
  return rows.map((r) => toRecord(r, creators));
}

/** Revokes a key at once; revoking twice is not an error. */
export async function revokeApiKey(db: Db, principal: Principal, input: z.infer<typeof revokeApiKeyInput>): Promise<ApiKeyRecord> {
  await authorize(db, principal, 'compute:api-keys:manage', resource.tenant(input.tenantId));
  const key = await db.apiKey.findUnique({ where: { id: input.apiKeyId } });
  if (!key || key.tenantId !== input.tenantId) throw new DomainError('NOT_FOUND', `API key ${input.apiKeyId} not found`);
  const creators = await operatorEmails(db, [key.createdBy]);
  if (key.revokedAt) return toRecord(key, creators);
  return db.$transaction(async (tx) => {
    const row = await tx.apiKey.update({ where: { id: key.id }, data: { revokedAt: new Date() } });
    await writeAudit(tx, {
      tenantId: key.tenantId,
      actor: principal.actor,
      action: 'api-key.revoked',
      resource: `compute-api-key/${key.id}`,
    });
    return toRecord(row, creators);
  });
}

/**
 * The principal of a bearer API key, or null for anything that is not a live key of ours (unknown, revoked,
 * expired, wrong secret). Records the key's last use, at most once a minute, so listing shows it without a
 * write per request.
 */
export async function authenticateApiKey(db: Db, bearer: string): Promise<Principal | null> {
  const match = KEY_PATTERN.exec(bearer);
  if (!match) return null;
  const key = await typed(db)
    .selectFrom('api_keys')
    .select(['id', 'tenant_id', 'role', 'secret_hash'])
    .select((eb) => [
      eb
        .and([eb('revoked_at', 'is', null), eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', computeNow)])])
        .$castTo<boolean>()
        .as('live'),
      eb
        .or([eb('last_used_at', 'is', null), eb('last_used_at', '<', sql<Date>`compute_now() - interval '1 minute'`)])
        .$castTo<boolean>()
        .as('stale_use'),
    ])
    .where('id', '=', match[1]!)
    .executeTakeFirst();
  if (!key || !key.live) return null;
  if (!tokenSecretMatches(key.secret_hash, match[2]!)) return null;
  if (key.stale_use) await typed(db).updateTable('api_keys').set({ last_used_at: computeNow }).where('id', '=', key.id).execute();
  return principalOf('api-key', key.id, [[key.tenant_id, key.role as Role]]);
}

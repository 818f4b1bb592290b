import type { z } from 'zod';
import type { Db } from '../db/client';
import { isUniqueViolation } from '../db/errors';
import { DomainError } from '../../protocol/errors';
import { newId } from '../ids';
import { authorize, projectResource, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { writeAudit } from '../events/publish';
import { editAllowList, MAX_EK_ALLOW_LIST } from '../../protocol/api/tpm-settings';
import type {
  createPoolInput,
  listPoolsInput,
  PoolPolicy,
  PoolRecord,
  poolRefInput,
  updatePoolInput,
} from '../../protocol/api/pool-schemas';

type PoolRow = {
  id: string;
  ownerTenantId: string;
  siteId: string;
  name: string;
  agent: string;
  policy: unknown;
  acceptanceChecks: string[];
  createdAt: Date;
  archivedAt: Date | null;
};
const toPoolRecord = (p: PoolRow): PoolRecord => ({
  id: p.id,
  tenantId: p.ownerTenantId,
  siteId: p.siteId,
  name: p.name,
  agent: p.agent as PoolRecord['agent'],
  policy: (p.policy ?? {}) as PoolPolicy,
  acceptanceChecks: p.acceptanceChecks,
  createdAt: p.createdAt.toISOString(),
  archivedAt: p.archivedAt?.toISOString() ?? null,
});

/** Creates a pool in one of the tenant's own live sites. Decided as `compute:pools:manage` on the tenant. */
export async function createPool(db: Db, principal: Principal, input: z.infer<typeof createPoolInput>): Promise<PoolRecord> {
  await authorize(db, principal, 'compute:pools:manage', resource.tenant(input.tenantId));
  const site = await db.site.findUnique({ where: { id: input.siteId } });
  // A site of another tenant is indistinguishable from a missing one.
  if (!site || site.ownerTenantId !== input.tenantId) {
    throw new DomainError('NOT_FOUND', `Site ${input.siteId} not found`, { field: 'siteId' });
  }
  if (site.archivedAt) throw new DomainError('INVALID_STATE', `Site ${site.id} is archived`, { field: 'siteId' });
  try {
    return await db.$transaction(async (tx) => {
      const pool = await tx.pool.create({
        data: {
          id: newId('pool'),
          siteId: site.id,
          ownerTenantId: input.tenantId,
          name: input.name,
          agent: input.agent,
          policy: (input.policy ?? {}) as object,
          // The built-in checks count as the pool's checks too: the join then leaves its nodes adopting, and
          // node.acceptance.started names them.
          acceptanceChecks: [...new Set([...(input.acceptanceChecks ?? []), ...(input.policy?.acceptance ?? []).map((c) => c.check)])],
        },
      });
      await projectResource(tx, resource.pool(pool.id), input.tenantId);
      await writeAudit(tx, {
        tenantId: input.tenantId,
        actor: principal.actor,
        action: 'pool.created',
        resource: resource.pool(pool.id),
        data: { name: pool.name, siteId: site.id, agent: pool.agent },
      });
      return toPoolRecord(pool);
    });
  } catch (error) {
    if (isUniqueViolation(error))
      throw new DomainError('ALREADY_EXISTS', `A pool named ${input.name} already exists in site ${site.name}`, { field: 'name' });
    throw error;
  }
}

export async function listPools(db: Db, principal: Principal, input: z.infer<typeof listPoolsInput>): Promise<PoolRecord[]> {
  await authorize(db, principal, 'compute:pools:read', resource.tenant(input.tenantId));
  const rows = await db.pool.findMany({
    where: {
      ownerTenantId: input.tenantId,
      ...(input.siteId ? { siteId: input.siteId } : {}),
      ...(input.includeArchived ? {} : { archivedAt: null }),
    },
    orderBy: { createdAt: 'asc' },
  });
  return rows.map(toPoolRecord);
}

/**
 * Loads a pool after deciding `action` on it, and checks again that it belongs to the tenant the caller
 * named: every pool-scoped domain function goes through here.
 */
export async function loadPool(db: Db, principal: Principal, action: Parameters<typeof authorize>[2], input: z.infer<typeof poolRefInput>) {
  const owner = await authorize(db, principal, action, resource.pool(input.poolId));
  const pool = owner === input.tenantId ? await db.pool.findUnique({ where: { id: input.poolId } }) : null;
  if (!pool) throw new DomainError('NOT_FOUND', `Pool ${input.poolId} not found`);
  return pool;
}

export async function getPool(db: Db, principal: Principal, input: z.infer<typeof poolRefInput>): Promise<PoolRecord> {
  return toPoolRecord(await loadPool(db, principal, 'compute:pools:read', input));
}

/** Archives a pool; archiving twice returns the archived pool. */
export async function archivePool(db: Db, principal: Principal, input: z.infer<typeof poolRefInput>): Promise<PoolRecord> {
  const pool = await loadPool(db, principal, 'compute:pools:manage', input);
  if (pool.archivedAt) return toPoolRecord(pool);
  return db.$transaction(async (tx) => {
    const archived = await tx.pool.update({ where: { id: pool.id }, data: { archivedAt: new Date() } });
    await writeAudit(tx, {
      tenantId: pool.ownerTenantId,
      actor: principal.actor,
      action: 'pool.archived',
      resource: resource.pool(pool.id),
    });
    return toPoolRecord(archived);
  });
}

/**
 * `pools.update` (`compute:pools:manage` on the pool): adds and removes EK hashes of the pool's TPM allow-list
 * (`policy.tpm.ekAllowList`). A listed EK's activated TPM joins this pool without an operator; later joins read
 * the new list. The audit row names the hashes added and removed.
 */
export async function updatePool(db: Db, principal: Principal, input: z.infer<typeof updatePoolInput>): Promise<PoolRecord> {
  const pool = await loadPool(db, principal, 'compute:pools:manage', input);
  if (pool.archivedAt) throw new DomainError('INVALID_STATE', `Pool ${pool.id} is archived`, { field: 'poolId' });
  const policy = (pool.policy ?? {}) as PoolPolicy;
  const ekAllowList = editAllowList(policy.tpm?.ekAllowList ?? [], input.tpm.addEkHashes, input.tpm.removeEkHashes);
  if (ekAllowList.length > MAX_EK_ALLOW_LIST) {
    throw new DomainError('INVALID_ARGUMENT', `tpm.addEkHashes: a pool lists at most ${MAX_EK_ALLOW_LIST} EK hashes`, {
      field: 'tpm.addEkHashes',
    });
  }
  const next: PoolPolicy = { ...policy, tpm: { ...policy.tpm, ekAllowList } };
  return savePoolPolicy(db, principal, pool, next, {
    tpm: { addEkHashes: input.tpm.addEkHashes ?? [], removeEkHashes: input.tpm.removeEkHashes ?? [] },
  });
}

/** Stores a pool's new policy, audited as `pool.updated` with `change` (what the caller changed), and answers the pool. */
export function savePoolPolicy(
  db: Db,
  principal: Principal,
  pool: { id: string; ownerTenantId: string },
  policy: PoolPolicy,
  change: Record<string, unknown>,
): Promise<PoolRecord> {
  return db.$transaction(async (tx) => {
    const updated = await tx.pool.update({ where: { id: pool.id }, data: { policy: policy as object } });
    await writeAudit(tx, {
      tenantId: pool.ownerTenantId,
      actor: principal.actor,
      action: 'pool.updated',
      resource: resource.pool(pool.id),
      data: change,
    });
    return toPoolRecord(updated);
  });
}

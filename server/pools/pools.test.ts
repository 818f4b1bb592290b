import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createCaller } from '../api/root';
import { toDomainError } from '../api/trpc';

async function domainError(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).not.toBeNull();
  return toDomainError(error)!;
}

describe('sites and pools', () => {
  it('creates, lists, gets and archives a pool', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const api = createCaller({ db, principal: t.admin });
    const pool = await api.pools.create({
      tenantId: t.tenantId,
      siteId: t.site.id,
      name: 'gpu-a100',
      agent: 'bcd',
      policy: {
        joinAttestors: ['join-token', 'tpm'],
        kubernetes: { platformOperated: true },
        acceptance: [{ check: 'gpu-count', min: 8 }],
      },
      acceptanceChecks: ['gpu-count'],
    });
    expect(pool).toMatchObject({ name: 'gpu-a100', agent: 'bcd', siteId: t.site.id, tenantId: t.tenantId, archivedAt: null });
    expect(pool.acceptanceChecks).toEqual(['gpu-count']);
    expect(pool.policy).toEqual({
      joinAttestors: ['join-token', 'tpm'],
      kubernetes: { platformOperated: true },
      acceptance: [{ check: 'gpu-count', min: 8 }],
    });
    expect((await api.pools.list({ tenantId: t.tenantId })).items.map((p) => p.name).sort()).toEqual(['gpu-a100', 'pool-a']);
    const archived = await api.pools.archive({ tenantId: t.tenantId, poolId: pool.id });
    expect(archived.archivedAt).not.toBeNull();
    // Archiving twice returns the archived pool.
    expect((await api.pools.archive({ tenantId: t.tenantId, poolId: pool.id })).archivedAt).toBe(archived.archivedAt);
    expect((await api.pools.list({ tenantId: t.tenantId })).items.map((p) => p.name)).toEqual(['pool-a']);
    expect((await api.pools.list({ tenantId: t.tenantId, includeArchived: true })).items).toHaveLength(2);
    const audit = await db.auditEntry.findMany({
      where: { tenantId: t.tenantId, resource: `compute-pool/${pool.id}` },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((a) => [a.action, a.actor])).toEqual([
      ['pool.created', t.admin.actor],
      ['pool.archived', t.admin.actor],
    ]);
  });

  it('refuses a pool in a site of another tenant as NOT_FOUND, naming the field', async () => {
    const db = testDb();
    const [a, b] = await Promise.all([createTestTenant(db), createTestTenant(db)]);
    const error = await domainError(
      createCaller({ db, principal: b.admin }).pools.create({ tenantId: b.tenantId, siteId: a.site.id, name: 'x', agent: 'bcd' }),
    );
    expect(error).toMatchObject({ code: 'NOT_FOUND', field: 'siteId' });
    expect(await db.pool.count({ where: { ownerTenantId: b.tenantId, name: 'x' } })).toBe(0);
  });

  it('refuses duplicates, bad names, unknown attestors and archived sites with a clear error', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const api = createCaller({ db, principal: t.admin });
    const base = { tenantId: t.tenantId, siteId: t.site.id, agent: 'bcd' as const };
    expect(await domainError(api.pools.create({ ...base, name: 'pool-a' }))).toMatchObject({ code: 'ALREADY_EXISTS', field: 'name' });
    expect(await domainError(api.pools.create({ ...base, name: 'Pool A' }))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'name' });
    expect(await domainError(api.pools.create({ ...base, name: 'ok', agent: 'ssh' as never }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'agent',
    });
    expect(await domainError(api.pools.create({ ...base, name: 'ok', policy: { joinAttestors: ['password' as never] } }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'policy.joinAttestors.0',
    });
    expect(await domainError(api.sites.create({ tenantId: t.tenantId, name: 'site-a' }))).toMatchObject({
      code: 'ALREADY_EXISTS',
      field: 'name',
    });
    expect(await domainError(api.sites.create({ tenantId: t.tenantId, name: 'p', kind: 'platform' }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'kind',
    });

    // Only checks the agent runs, each with its settings: a name nothing runs would leave every new node adopting.
    const unknownCheck = await domainError(api.pools.create({ ...base, name: 'burn', acceptanceChecks: ['gpu-burn'] }));
    expect(unknownCheck).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'acceptanceChecks.0' });
    expect(unknownCheck.message).toContain('identity, min-cpus, min-memory, gpu-count');
    expect(await domainError(api.pools.create({ ...base, name: 'bare', acceptanceChecks: ['min-cpus'] }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'acceptanceChecks.0',
    });
    expect(
      await domainError(
        api.pools.create({ ...base, name: 'burn2', policy: { acceptance: [{ check: 'gpu-burn' as never, min: 1 } as never] } }),
      ),
    ).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await db.pool.count({ where: { ownerTenantId: t.tenantId, name: { in: ['burn', 'bare', 'burn2'] } } })).toBe(0);

    // A site with live pools cannot be archived; an archived site takes no new pools.
    expect(await domainError(api.sites.archive({ tenantId: t.tenantId, siteId: t.site.id }))).toMatchObject({ code: 'INVALID_STATE' });
    await api.pools.archive({ tenantId: t.tenantId, poolId: t.pool.id });
    await api.sites.archive({ tenantId: t.tenantId, siteId: t.site.id });
    expect(await domainError(api.pools.create({ ...base, name: 'late' }))).toMatchObject({ code: 'INVALID_STATE', field: 'siteId' });
    expect(await db.pool.count({ where: { ownerTenantId: t.tenantId } })).toBe(1);
  });
});

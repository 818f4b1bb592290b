import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createCaller } from '../api/root';
import { loadOperatorPrincipal, createOperator } from '../operators/operators';
import { principalOf } from '../authz/principal';
import { ensureRootTenant } from './tenants';

describe('tenants', () => {
  it('lets root admins create tenants; the creating operator administers the new one', async () => {
    const db = testDb();
    const root = await ensureRootTenant(db);
    const email = `root-${randomBytes(4).toString('hex')}@example.com`;
    const { id } = await createOperator(db, { email, name: 'Root admin', password: 'correct horse battery', tenantId: root.id, role: 'admin' });
    const before = (await loadOperatorPrincipal(db, id))!;
    const name = `acme-${randomBytes(3).toString('hex')}`;
    const created = await createCaller({ db, principal: before }).tenants.create({ name });
    expect(created).toMatchObject({ name, isRoot: false, isMember: true });

    const after = (await loadOperatorPrincipal(db, id))!;
    expect(after.memberships.get(created.id)).toBe('admin');
    const listed = (await createCaller({ db, principal: after }).tenants.list({})).items;
    expect(listed.find((t) => t.id === created.id)).toMatchObject({ isMember: true });
    // It can act inside the new tenant now.
    await expect(createCaller({ db, principal: after }).sites.create({ tenantId: created.id, name: 'dc1' })).resolves.toMatchObject({ kind: 'custom' });
    const audit = await db.auditEntry.findFirstOrThrow({ where: { tenantId: root.id, action: 'tenant.created', resource: `compute-tenant/${created.id}` } });
    expect(audit.actor).toBe(`operator:${id}`);
  });

  it('refuses tenant creation outside the root tenant, and duplicates', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    // A clear refusal that does not reveal the root tenant's id.
    const refused = await createCaller({ db, principal: t.admin }).tenants.create({ name: `x-${randomBytes(3).toString('hex')}` }).catch((e) => e);
    expect(refused).toMatchObject({ code: 'FORBIDDEN', message: 'Only admins of the root tenant create tenants' });
    const root = await ensureRootTenant(db);
    const rootKey = principalOf('api-key', 'ak_root_test', [[root.id, 'admin']]);
    const name = `dup-${randomBytes(3).toString('hex')}`;
    const viaKey = await createCaller({ db, principal: rootKey }).tenants.create({ name });
    // An API key has no membership to gain: it sees the tenant but does not belong to it.
    expect(viaKey.isMember).toBe(false);
    await expect(createCaller({ db, principal: rootKey }).tenants.create({ name })).rejects.toMatchObject({ code: 'CONFLICT', message: `A tenant named ${name} already exists` });
  });

  it('lets a root admin mint only the first API key of a new tenant, audited in the root tenant', async () => {
    const db = testDb();
    const root = await ensureRootTenant(db);
    const rootKey = principalOf('api-key', `ak_root_${randomBytes(3).toString('hex')}`, [[root.id, 'admin']]);
    const tenant = await createCaller({ db, principal: rootKey }).tenants.create({ name: `fresh-${randomBytes(3).toString('hex')}` });
    const api = createCaller({ db, principal: rootKey });
    const [a, b] = await Promise.allSettled([
      api.apiKeys.create({ tenantId: tenant.id, role: 'admin', name: 'first' }),
      api.apiKeys.create({ tenantId: tenant.id, role: 'admin', name: 'second' }),
    ]);
    // Two at once: exactly one first key.
    expect([a.status, b.status].sort()).toEqual(['fulfilled', 'rejected']);
    expect(((a.status === 'rejected' ? a : b) as PromiseRejectedResult).reason).toMatchObject({ code: 'NOT_FOUND' });
    await expect(api.apiKeys.create({ tenantId: tenant.id, role: 'viewer', name: 'later' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await db.apiKey.count({ where: { tenantId: tenant.id } })).toBe(1);
    const audit = await db.auditEntry.findMany({ where: { tenantId: root.id, action: 'api-key.created-for-tenant', actor: rootKey.actor } });
    expect(audit.map((row) => row.data)).toEqual([{ tenantId: tenant.id, role: 'admin' }]);
  });
});

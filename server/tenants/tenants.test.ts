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
    await expect(createCaller({ db, principal: t.admin }).tenants.create({ name: `x-${randomBytes(3).toString('hex')}` })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const root = await ensureRootTenant(db);
    const rootKey = principalOf('api-key', 'ak_root_test', [[root.id, 'admin']]);
    const name = `dup-${randomBytes(3).toString('hex')}`;
    const viaKey = await createCaller({ db, principal: rootKey }).tenants.create({ name });
    // An API key has no membership to gain: it sees the tenant but does not belong to it.
    expect(viaKey.isMember).toBe(false);
    await expect(createCaller({ db, principal: rootKey }).tenants.create({ name })).rejects.toMatchObject({ code: 'CONFLICT', message: `A tenant named ${name} already exists` });
  });
});

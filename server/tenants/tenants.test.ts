import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createCaller } from '../api/root';
import { loadOperatorPrincipal, createOperator } from '../operators/operators';
import { principalOf } from '../authz/principal';
import { acceptInvitation } from '../operators/invitations';
import { ensureRootTenant } from './tenants';

describe('tenants', () => {
  it('lets root admins create tenants without joining them; the first admin they invite acts in it', async () => {
    const db = testDb();
    const root = await ensureRootTenant(db);
    const email = `root-${randomBytes(4).toString('hex')}@example.com`;
    const { id } = await createOperator(db, {
      email,
      name: 'Root admin',
      password: 'correct horse battery',
      tenantId: root.id,
      role: 'admin',
    });
    const before = (await loadOperatorPrincipal(db, id))!;
    const name = `acme-${randomBytes(3).toString('hex')}`;
    const created = await createCaller({ db, principal: before }).tenants.create({ name });
    expect(created).toMatchObject({ name, isRoot: false, isMember: false, role: null });
    expect(await db.membership.count({ where: { tenantId: created.id } })).toBe(0);

    const after = (await loadOperatorPrincipal(db, id))!;
    expect(after.memberships.has(created.id)).toBe(false);
    const rootApi = createCaller({ db, principal: after });
    // Root admins see the tenant (to bootstrap it) but are not members: the console's switcher leaves it out.
    expect((await rootApi.tenants.list({})).items.find((t) => t.id === created.id)).toMatchObject({ isMember: false, role: null });
    // They do not act inside it: an outsider's NOT_FOUND.
    await expect(rootApi.sites.create({ tenantId: created.id, name: 'dc1' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(rootApi.invitations.create({ tenantId: created.id, email: 'viewer@example.com', role: 'viewer' })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });

    // The proper path: the first admin's invitation, accepted by that person, who then acts in the tenant.
    const adminEmail = `first-${randomBytes(4).toString('hex')}@example.com`;
    const invitation = await rootApi.invitations.create({ tenantId: created.id, email: adminEmail, role: 'admin' });
    const accepted = await acceptInvitation(db, { token: invitation.token, name: 'First Admin', password: 'correct horse battery' });
    expect(accepted).toMatchObject({ tenantId: created.id, role: 'admin' });
    const firstAdmin = (await loadOperatorPrincipal(db, accepted.operatorId))!;
    await expect(createCaller({ db, principal: firstAdmin }).sites.create({ tenantId: created.id, name: 'dc1' })).resolves.toMatchObject({
      kind: 'custom',
    });
    // Once the tenant has an admin, its admins decide: a second "first admin" is refused.
    await expect(rootApi.invitations.create({ tenantId: created.id, email: 'second@example.com', role: 'admin' })).rejects.toMatchObject({
      code: 'FORBIDDEN',
      message: `Tenant ${name} already has members or API keys: only its own admins invite operators`,
    });
    const audit = await db.auditEntry.findFirstOrThrow({
      where: { tenantId: root.id, action: 'tenant.created', resource: `compute-tenant/${created.id}` },
    });
    expect(audit.actor).toBe(`operator:${id}`);
  });

  it('refuses tenant creation outside the root tenant, and duplicates', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    // A clear refusal that does not reveal the root tenant's id.
    const refused = await createCaller({ db, principal: t.admin })
      .tenants.create({ name: `x-${randomBytes(3).toString('hex')}` })
      .catch((e) => e);
    expect(refused).toMatchObject({ code: 'FORBIDDEN', message: 'Only admins of the root tenant create tenants' });
    const root = await ensureRootTenant(db);
    const rootKey = principalOf('api-key', 'ak_root_test', [[root.id, 'admin']]);
    const name = `dup-${randomBytes(3).toString('hex')}`;
    const viaKey = await createCaller({ db, principal: rootKey }).tenants.create({ name });
    // An API key has no membership to gain: it sees the tenant but does not belong to it.
    expect(viaKey.isMember).toBe(false);
    await expect(createCaller({ db, principal: rootKey }).tenants.create({ name })).rejects.toMatchObject({
      code: 'CONFLICT',
      message: `A tenant named ${name} already exists`,
    });
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
    expect(((a.status === 'rejected' ? a : b) as PromiseRejectedResult).reason).toMatchObject({
      code: 'FORBIDDEN',
      message: expect.stringContaining('only its own admins create its API keys'),
    });
    await expect(api.apiKeys.create({ tenantId: tenant.id, role: 'viewer', name: 'later' })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(await db.apiKey.count({ where: { tenantId: tenant.id } })).toBe(1);
    const audit = await db.auditEntry.findMany({
      where: { tenantId: root.id, action: 'api-key.created-for-tenant', actor: rootKey.actor },
    });
    expect(audit.map((row) => row.data)).toEqual([{ tenantId: tenant.id, role: 'admin' }]);
  });
});

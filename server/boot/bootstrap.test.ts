import { describe, expect, it } from 'vitest';
import { createMigratedDatabase } from '../../test/db';
import { createDb } from '../db/client';
import { authenticateOperator } from '../operators/operators';
import { bootstrapFirstStart, FIRST_ADMIN_EMAIL } from './bootstrap';

async function freshDb(name: string) {
  const url = await createMigratedDatabase(name);
  return createDb(url, { max: 4 });
}

describe('first start', () => {
  it('creates the root tenant, a default site and bcd pool, a PKI and a first admin, once', async () => {
    const db = await freshDb('boot_first');
    const secret = 'a-development-secret-0123456789-abcdefghijklmnop';
    const first = await bootstrapFirstStart(db, { secret, trustDomain: 'dev.example.com' });
    expect(first.createdPki).toBe(true);
    expect(first.firstAdmin?.email).toBe(FIRST_ADMIN_EMAIL);
    expect(first.firstAdmin!.password.length).toBeGreaterThanOrEqual(20);

    const root = await db.tenant.findFirstOrThrow({ where: { isRoot: true } });
    const site = await db.site.findFirstOrThrow({ where: { ownerTenantId: root.id } });
    expect(site).toMatchObject({ name: 'default', kind: 'platform' });
    const pool = await db.pool.findFirstOrThrow({ where: { siteId: site.id } });
    expect(pool).toMatchObject({ name: 'default', agent: 'bcd', ownerTenantId: root.id });
    expect(await authenticateOperator(db, FIRST_ADMIN_EMAIL, first.firstAdmin!.password)).toMatchObject({ email: FIRST_ADMIN_EMAIL });
    expect(await authenticateOperator(db, FIRST_ADMIN_EMAIL, 'wrong-password')).toBeNull();
    // Only the hash is stored.
    const operator = await db.operator.findFirstOrThrow();
    expect(operator.passwordHash).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(operator.passwordHash).not.toContain(first.firstAdmin!.password);

    const second = await bootstrapFirstStart(db, { secret, trustDomain: 'dev.example.com' });
    expect(second).toEqual({ rootTenantId: root.id, createdPki: false });
    expect(await db.tenant.count()).toBe(1);
    expect(await db.pool.count()).toBe(1);
    expect(await db.operator.count()).toBe(1);
    await db.$disconnect();
  });

  it('finishes a first start that stopped between the default site and its pool', async () => {
    const db = await freshDb('boot_resume');
    const { ensureRootTenant } = await import('../tenants/tenants');
    const { createSite } = await import('../sites/sites');
    const { principalOf } = await import('../authz/principal');
    const root = await ensureRootTenant(db);
    await createSite(db, principalOf('local', 'test', [[root.id, 'admin']]), { tenantId: root.id, name: 'default', kind: 'platform' });
    const result = await bootstrapFirstStart(db, {
      secret: 'a-development-secret-0123456789-abcdefghijklmnop',
      trustDomain: 'dev.example.com',
    });
    expect(result.defaultPoolId).toMatch(/^pool_/);
    expect(await db.site.count()).toBe(1);
    expect(await db.pool.findFirstOrThrow()).toMatchObject({ name: 'default', agent: 'bcd' });
    await db.$disconnect();
  });
});

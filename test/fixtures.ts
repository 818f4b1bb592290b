import { randomBytes } from 'node:crypto';
import type { Db } from '../server/db/client';
import { principalOf, type Principal } from '../server/authz/principal';
import { projectResource, resource } from '../server/authz/authorize';
import { newId } from '../server/ids';
import { createPool } from '../server/pools/pools';
import type { PoolRecord } from '../server/pools/schemas';
import { createSite, type SiteRecord } from '../server/sites/sites';

export interface TestTenant {
  tenantId: string;
  name: string;
  admin: Principal;
  operator: Principal;
  viewer: Principal;
  site: SiteRecord;
  pool: PoolRecord;
}

/**
 * A tenant of its own for one test: a custom site with a bcd pool, and principals for each role. Names are
 * random so test files can share the database and run in parallel.
 */
export async function createTestTenant(db: Db, options: { pool?: Partial<Parameters<typeof createPool>[2]> } = {}): Promise<TestTenant> {
  const name = `t-${randomBytes(5).toString('hex')}`;
  const tenantId = newId('tnt');
  await db.$transaction(async (tx) => {
    await tx.tenant.create({ data: { id: tenantId, name } });
    await projectResource(tx, resource.tenant(tenantId), tenantId);
  });
  const admin = principalOf('operator', `op_admin_${name}`, [[tenantId, 'admin']]);
  const site = await createSite(db, admin, { tenantId, name: 'site-a' });
  const pool = await createPool(db, admin, { tenantId, siteId: site.id, name: 'pool-a', agent: 'bcd', ...options.pool });
  return {
    tenantId,
    name,
    admin,
    operator: principalOf('operator', `op_operator_${name}`, [[tenantId, 'operator']]),
    viewer: principalOf('operator', `op_viewer_${name}`, [[tenantId, 'viewer']]),
    site,
    pool,
  };
}

import type { Db } from '../db/client';
import { principalOf } from '../authz/principal';
import { generatePassword } from '../operators/password';
import { createOperator } from '../operators/operators';
import { createPool } from '../pools/pools';
import { createSite } from '../sites/sites';
import { ensureRootTenant } from '../tenants/tenants';
import { hasPki, initPki } from '../pki/bundle/store';

export const FIRST_ADMIN_EMAIL = 'admin@better-compute.local';

/** The first admin's email: BETTER_COMPUTE_FIRST_ADMIN_EMAIL (checked at start), else the default. */
function firstAdminEmail(env: Record<string, string | undefined> = process.env): string {
  return env.BETTER_COMPUTE_FIRST_ADMIN_EMAIL?.trim().toLowerCase() || FIRST_ADMIN_EMAIL;
}

interface FirstStartResult {
  rootTenantId: string;
  createdPki: boolean;
  /** Set only on the start that created the first admin: the password is shown this once. */
  firstAdmin?: { email: string; password: string };
  defaultPoolId?: string;
}

/**
 * Brings a fresh database to a usable state: the root tenant, a `default` platform site with a `default`
 * bcd pool, a development PKI when there is none, and a first admin when there are no operators (its
 * email BETTER_COMPUTE_FIRST_ADMIN_EMAIL, default admin@better-compute.local; its password one-time). Each step
 * runs only when its object is missing, so starting twice changes nothing.
 */
export async function bootstrapFirstStart(
  db: Db,
  options: { secret: string; trustDomain: string; firstAdminEmail?: string },
): Promise<FirstStartResult> {
  const root = await ensureRootTenant(db);
  const result: FirstStartResult = { rootTenantId: root.id, createdPki: false };
  const system = principalOf('local', 'bootstrap', [[root.id, 'admin']]);

  // Each object is checked on its own (archived ones count), so a start interrupted between two steps
  // finishes the job next time instead of leaving a site without its pool.
  const site =
    (await db.site.findFirst({ where: { ownerTenantId: root.id, name: 'default' } })) ??
    (await createSite(db, system, { tenantId: root.id, name: 'default', kind: 'platform' }));
  if (!(await db.pool.findFirst({ where: { siteId: site.id, name: 'default' } }))) {
    const pool = await createPool(db, system, { tenantId: root.id, siteId: site.id, name: 'default', agent: 'bcd' });
    result.defaultPoolId = pool.id;
  }
  if (!(await hasPki(db))) {
    await initPki(db, { trustDomain: options.trustDomain, secret: options.secret });
    result.createdPki = true;
  }
  if ((await db.operator.count()) === 0) {
    // One-time for real: signed in with it, the admin must choose a new password before anything else.
    const password = generatePassword();
    const email = options.firstAdminEmail ?? firstAdminEmail();
    await createOperator(db, { email, name: 'First admin', password, tenantId: root.id, role: 'admin', passwordChangeRequired: true });
    result.firstAdmin = { email, password };
  }
  return result;
}

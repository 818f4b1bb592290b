import { randomBytes } from 'node:crypto';
import { createOperator, loadOperatorPrincipal } from '../server/operators/operators';
import { testDb } from './db';
import { createTestTenant } from './fixtures';

/** The password of the operators these fixtures create. */
const OPERATOR_PASSWORD = 'correct-horse-battery-staple';

/** A fresh tenant with one real admin operator named `name` (a random `admin-…@example.com`), acting through its principal. */
export async function tenantWithAdmin(name = 'Admin') {
  const db = testDb();
  const t = await createTestTenant(db);
  const { id } = await createOperator(db, {
    email: `admin-${randomBytes(4).toString('hex')}@example.com`,
    name,
    password: OPERATOR_PASSWORD,
    tenantId: t.tenantId,
    role: 'admin',
  });
  return { t, adminId: id, admin: (await loadOperatorPrincipal(db, id))! };
}

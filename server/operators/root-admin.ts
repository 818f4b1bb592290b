import type { Db } from '../db/client';

/** Whether the operator is an admin of the root tenant (the break-glass password sign-in keeps them in). */
export async function isRootTenantAdmin(db: Db, operatorId: string): Promise<boolean> {
  const count = await db.membership.count({ where: { operatorId, role: 'admin', tenant: { isRoot: true } } });
  return count > 0;
}

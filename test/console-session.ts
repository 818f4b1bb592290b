import { randomBytes } from 'node:crypto';
import type { Db } from '../server/db/client';
import { createOperator, type SessionClaim } from '../server/operators/operators';
import type { Role } from '../protocol/api/permissions';

/** A new operator of the tenant with `role` and a password, and the claim of the console session it signs in with. */
export async function signedInOperator(db: Db, tenantId: string, role: Role): Promise<SessionClaim> {
  const email = `op-${randomBytes(4).toString('hex')}@example.com`;
  const { id } = await createOperator(db, { email, name: 'Op', password: 'correct-horse-battery', tenantId, role });
  return { operatorId: id, sessionVersion: 1 };
}

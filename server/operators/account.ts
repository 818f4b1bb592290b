import type { Db } from '../db/client';

/** Whether the operator has a password of their own (an operator created by single sign-on has none). */
export async function hasOwnPassword(db: Db, operatorId: string): Promise<boolean> {
  const row = await db.operator.findUnique({ where: { id: operatorId }, select: { passwordHash: true } });
  return row?.passwordHash.startsWith('scrypt$') ?? false;
}

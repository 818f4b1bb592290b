import { z } from 'zod';
import type { Db } from '../db/client';
import { DomainError } from '../../protocol/errors';
import type { Principal } from '../authz/principal';
import { writeAudit } from '../events/publish';
import { hashPassword, verifyPassword } from './password';

export const MIN_PASSWORD_LENGTH = 12;

export const changePasswordInput = z.strictObject({
  currentPassword: z.string().min(1).max(1024),
  newPassword: z.string().min(MIN_PASSWORD_LENGTH, `use at least ${MIN_PASSWORD_LENGTH} characters`).max(1024),
});

/**
 * An operator sets a new password, proving the current one (a one-time password counts). It clears the
 * one-time state and moves the session version on, so every session, this one included, ends: the console
 * signs in again with the new password. Audited in each tenant the operator belongs to.
 */
export async function changeOwnPassword(
  db: Db,
  principal: Principal,
  input: z.infer<typeof changePasswordInput>,
): Promise<{ changed: true }> {
  if (principal.kind !== 'operator') throw new DomainError('ACCESS_DENIED', 'Only a signed-in operator has a password to change');
  const operator = await db.operator.findUnique({ where: { id: principal.id }, include: { memberships: true } });
  if (!operator) throw new DomainError('UNAUTHENTICATED', 'Sign in again');
  if (!(await verifyPassword(input.currentPassword, operator.passwordHash))) {
    throw new DomainError('INVALID_ARGUMENT', 'currentPassword: not your current password', { field: 'currentPassword' });
  }
  if (input.newPassword === input.currentPassword) {
    throw new DomainError('INVALID_ARGUMENT', 'newPassword: choose a password other than the current one', { field: 'newPassword' });
  }
  const passwordHash = await hashPassword(input.newPassword);
  await db.$transaction(async (tx) => {
    // Only the version this request was decided on: a concurrent change or sign-out wins, this one is refused.
    const { count } = await tx.operator.updateMany({
      where: { id: operator.id, sessionVersion: operator.sessionVersion, passwordHash: operator.passwordHash },
      data: { passwordHash, passwordChangeRequired: false, sessionVersion: { increment: 1 } },
    });
    if (count === 0) throw new DomainError('CONFLICT', 'The password or session changed meanwhile; sign in again');
    for (const m of operator.memberships) {
      await writeAudit(tx, {
        tenantId: m.tenantId,
        actor: principal.actor,
        action: 'operator.password-changed',
        resource: `compute-operator/${operator.id}`,
        data: { wasOneTime: operator.passwordChangeRequired },
      });
    }
  });
  return { changed: true };
}

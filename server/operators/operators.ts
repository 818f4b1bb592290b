import { z } from 'zod';
import type { Db } from '../db/client';
import { isUniqueViolation } from '../db/errors';
import { DomainError } from '../errors';
import { newId } from '../ids';
import { principalOf, type Principal } from '../authz/principal';
import type { Role } from '../authz/permissions';
import { generatePassword, hashPassword, verifyPassword } from './password';

export const operatorEmail = z.string().trim().toLowerCase().email().max(254);

/** Creates an operator with one tenant membership. The password is stored only as an scrypt hash. */
export async function createOperator(
  db: Db,
  input: { email: string; name: string; password: string; tenantId: string; role: Role },
): Promise<{ id: string; email: string }> {
  const email = operatorEmail.parse(input.email);
  if (input.password.length < 12) throw new DomainError('INVALID_ARGUMENT', 'password: use at least 12 characters', { field: 'password' });
  const passwordHash = await hashPassword(input.password);
  try {
    return await db.$transaction(async (tx) => {
      const operator = await tx.operator.create({ data: { id: newId('op'), email, name: input.name, passwordHash } });
      await tx.membership.create({ data: { operatorId: operator.id, tenantId: input.tenantId, role: input.role } });
      return { id: operator.id, email };
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new DomainError('ALREADY_EXISTS', `An operator with email ${email} already exists`, { field: 'email' });
    throw error;
  }
}

/**
 * Sets a new one-time password for an operator (the recovery path when the printed one was lost), and
 * returns it. Only its scrypt hash is stored.
 */
export async function resetOperatorPassword(db: Db, email: string): Promise<string> {
  const parsed = operatorEmail.safeParse(email);
  if (!parsed.success) throw new DomainError('INVALID_ARGUMENT', 'email: not an email address', { field: 'email' });
  const password = generatePassword();
  const passwordHash = await hashPassword(password);
  const { count } = await db.operator.updateMany({ where: { email: parsed.data }, data: { passwordHash } });
  if (count === 0) throw new DomainError('NOT_FOUND', `Operator ${parsed.data} not found`);
  return password;
}

// Compared against when the email is unknown, so a missing account costs the same time as a wrong password.
let dummyHash: Promise<string> | undefined;

/** Checks an operator's credentials; null for a wrong email or password alike. */
export async function authenticateOperator(db: Db, email: string, password: string): Promise<{ id: string; email: string; name: string } | null> {
  const parsed = operatorEmail.safeParse(email);
  const operator = parsed.success ? await db.operator.findUnique({ where: { email: parsed.data } }) : null;
  if (!operator) {
    await verifyPassword(password, await (dummyHash ??= hashPassword('not-a-real-password')));
    return null;
  }
  return (await verifyPassword(password, operator.passwordHash)) ? { id: operator.id, email: operator.email, name: operator.name } : null;
}

/** The principal of a signed-in operator, read fresh so a removed membership takes effect at once. */
export async function loadOperatorPrincipal(db: Db, operatorId: string): Promise<Principal | null> {
  const operator = await db.operator.findUnique({ where: { id: operatorId }, include: { memberships: true } });
  if (!operator) return null;
  return principalOf('operator', operator.id, operator.memberships.map((m) => [m.tenantId, m.role as Role]));
}

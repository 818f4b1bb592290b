import type { Db } from '../db/client';
import { isUniqueViolation } from '../db/errors';
import { DomainError } from '../../protocol/errors';
import { newId } from '../ids';
import { principalOf, type Principal } from '../authz/principal';
import type { Role } from '../../protocol/api/permissions';
import { generatePassword, hashPassword } from './password';
import { operatorEmail } from './email';
import { clearSignInThrottle } from './sign-in';
import { writeAudit } from '../events/publish';

export { authenticateOperator, SignInLockedError, SIGN_IN_THROTTLE } from './sign-in';

export { operatorEmail } from './email';

/** Creates an operator with one tenant membership. The password is stored only as an scrypt hash. */
export async function createOperator(
  db: Db,
  input: { email: string; name: string; password: string; tenantId: string; role: Role; passwordChangeRequired?: boolean },
  audit?: { actor: string },
): Promise<{ id: string; email: string }> {
  const email = operatorEmail.parse(input.email);
  if (input.password.length < 12) throw new DomainError('INVALID_ARGUMENT', 'password: use at least 12 characters', { field: 'password' });
  const passwordHash = await hashPassword(input.password);
  try {
    return await db.$transaction(async (tx) => {
      const operator = await tx.operator.create({
        data: { id: newId('op'), email, name: input.name, passwordHash, passwordChangeRequired: input.passwordChangeRequired ?? false },
      });
      await tx.membership.create({ data: { operatorId: operator.id, tenantId: input.tenantId, role: input.role } });
      if (audit) {
        await writeAudit(tx, {
          tenantId: input.tenantId,
          actor: audit.actor,
          action: 'operator.created',
          resource: `compute-operator/${operator.id}`,
          data: { email, role: input.role },
        });
      }
      return { id: operator.id, email };
    });
  } catch (error) {
    if (isUniqueViolation(error))
      throw new DomainError('ALREADY_EXISTS', `An operator with email ${email} already exists`, { field: 'email' });
    throw error;
  }
}

/**
 * Creates an operator with a generated one-time password (`operators create --local`, break-glass on the
 * server machine) and returns it: signed in with it, the operator must choose a new one first.
 */
export async function createOperatorWithOneTimePassword(
  db: Db,
  input: { email: string; name?: string; tenantId: string; role: Role },
  actor: string,
): Promise<{ id: string; email: string; password: string }> {
  const password = generatePassword();
  const email = operatorEmail.safeParse(input.email);
  if (!email.success) throw new DomainError('INVALID_ARGUMENT', 'email: not an email address', { field: 'email' });
  const created = await createOperator(
    db,
    { ...input, email: email.data, name: input.name ?? email.data, password, passwordChangeRequired: true },
    { actor },
  );
  return { ...created, password };
}

/**
 * Sets a new one-time password for an operator (the recovery path when the printed one was lost), and
 * returns it. Only its scrypt hash is stored. It is one-time for real: signed in with it, the operator must
 * choose a new password before any console page or API call (`passwordChangeRequired`).
 */
export async function resetOperatorPassword(db: Db, email: string): Promise<string> {
  const parsed = operatorEmail.safeParse(email);
  if (!parsed.success) throw new DomainError('INVALID_ARGUMENT', 'email: not an email address', { field: 'email' });
  const password = generatePassword();
  const passwordHash = await hashPassword(password);
  // The new session version ends every session signed in under the old password, on every instance.
  const { count } = await db.operator.updateMany({
    where: { email: parsed.data },
    data: { passwordHash, passwordChangeRequired: true, sessionVersion: { increment: 1 } },
  });
  if (count === 0) throw new DomainError('NOT_FOUND', `Operator ${parsed.data} not found`);
  // A reset also lifts the sign-in throttle: the recovery path works even for an account under attack.
  await clearSignInThrottle(db, parsed.data);
  return password;
}

/** What a console session's JWT claims: the operator and the session version it was signed in under. */
export interface SessionClaim {
  operatorId: string;
  sessionVersion: number;
}

/**
 * The principal of a signed-in operator, read fresh so a removed membership takes effect at once. With a
 * session claim, the claim's version must still be the operator's: sign-out, a password reset or a removal
 * moved it on, and every older session is over.
 */
export async function loadOperatorPrincipal(db: Db, operatorId: string, claim?: SessionClaim): Promise<Principal | null> {
  const operator = await db.operator.findUnique({ where: { id: operatorId }, include: { memberships: true } });
  if (!operator) return null;
  if (claim && (claim.operatorId !== operator.id || claim.sessionVersion !== operator.sessionVersion)) return null;
  const principal = principalOf(
    'operator',
    operator.id,
    operator.memberships.map((m) => [m.tenantId, m.role as Role]),
  );
  return operator.passwordChangeRequired ? { ...principal, passwordChangeRequired: true } : principal;
}

/** The principal a console session stands for, or null when the session has been ended. */
export function loadSessionPrincipal(db: Db, claim: SessionClaim): Promise<Principal | null> {
  return loadOperatorPrincipal(db, claim.operatorId, claim);
}

/**
 * Ends every console session of an operator at once (sign-out, removal): the version their JWTs carry is
 * no longer the operator's. PostgreSQL holds the version, so every instance sees the end on its next request.
 * Only the session being ended may bump it (`fromVersion`), so a stale cookie replayed to the sign-out
 * endpoint cannot end the sessions that came after it.
 */
export async function endOperatorSessions(db: Db, operatorId: string, fromVersion?: number): Promise<void> {
  await db.operator.updateMany({
    where: { id: operatorId, ...(fromVersion === undefined ? {} : { sessionVersion: fromVersion }) },
    data: { sessionVersion: { increment: 1 } },
  });
}

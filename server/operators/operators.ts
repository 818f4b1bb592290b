import { createHash } from 'node:crypto';
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
  // The new session version ends every session signed in under the old password, on every instance.
  const { count } = await db.operator.updateMany({ where: { email: parsed.data }, data: { passwordHash, sessionVersion: { increment: 1 } } });
  if (count === 0) throw new DomainError('NOT_FOUND', `Operator ${parsed.data} not found`);
  // A reset also lifts a sign-in lock: the recovery path works even for an account under attack.
  await db.$executeRaw`DELETE FROM rate_limits WHERE key = ${signInFailuresKey(parsed.data)}`;
  return password;
}

// Compared against when the email is unknown, so a missing account costs the same time as a wrong password.
let dummyHash: Promise<string> | undefined;

/**
 * Sign-in attempts per email and window: an email gets at most `limit` failed attempts per window.
 * Counted in PostgreSQL (rate_limits, the same atomic counter as the join refusal limit), so every
 * server instance shares it and parallel guesses cannot slip past it; a successful sign-in or a password
 * reset clears it. Unknown addresses count the same way, so the lock tells nothing about which accounts
 * exist; text that is not an email address is refused at once, without a password check or a row.
 */
export const SIGN_IN_FAILURES = { limit: 10, window: '15 minutes' } as const;

/** Too many failed sign-ins for this email; its message is what next-auth hands the sign-in form. */
export class SignInLockedError extends Error {
  constructor() {
    super('TooManyFailedSignIns');
    this.name = 'SignInLockedError';
  }
}

/** The rate-limit key of an email's sign-ins: a hash, so the shared table holds no addresses. */
export function signInFailuresKey(email: string): string {
  return `sign-in-failures:${createHash('sha256').update(email.trim().toLowerCase()).digest('hex')}`;
}

/**
 * Checks an operator's credentials; null for a wrong email or password alike.
 *
 * @throws SignInLockedError once the email used up its attempts for the window; no password is checked.
 */
export async function authenticateOperator(
  db: Db,
  email: string,
  password: string,
): Promise<{ id: string; email: string; name: string; sessionVersion: number } | null> {
  const parsed = operatorEmail.safeParse(email);
  if (!parsed.success) return null;
  const key = signInFailuresKey(parsed.data);
  // Counted before the password is checked, atomically (row lock), so concurrent guesses share the limit.
  const [attempt] = await db.$queryRaw<{ allowed: boolean }[]>`
    SELECT allowed FROM rate_limit_hit(${key}, ${SIGN_IN_FAILURES.limit}, ${SIGN_IN_FAILURES.window}::interval)`;
  if (!attempt?.allowed) throw new SignInLockedError();
  const operator = await db.operator.findUnique({ where: { email: parsed.data } });
  const valid = operator
    ? await verifyPassword(password, operator.passwordHash)
    : (await verifyPassword(password, await (dummyHash ??= hashPassword('not-a-real-password'))), false);
  if (!operator || !valid) {
    // Expired counters of any address go with the next failure, so the table holds only live windows.
    await db.$executeRaw`DELETE FROM rate_limits WHERE key LIKE 'sign-in-failures:%' AND window_start <= compute_now() - ${SIGN_IN_FAILURES.window}::interval`;
    return null;
  }
  await db.$executeRaw`DELETE FROM rate_limits WHERE key = ${key}`;
  return { id: operator.id, email: operator.email, name: operator.name, sessionVersion: operator.sessionVersion };
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
  return principalOf('operator', operator.id, operator.memberships.map((m) => [m.tenantId, m.role as Role]));
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

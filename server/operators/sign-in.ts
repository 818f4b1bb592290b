import { createHash } from 'node:crypto';
import type { Db } from '../db/client';
import { operatorEmail } from './email';
import { hashPassword, verifyPassword } from './password';

/**
 * Failed sign-ins are throttled per (account, client address) with backoff, and per account with a
 * higher ceiling, so a stranger's guesses never lock the right password out from another address:
 *
 * - a pair gets `freeFailures` failures; each further one blocks that pair for `backoffSeconds` doubled per
 *   failure, at most `maxBackoffSeconds`; a pair with no failure for `forgetAfter` starts over;
 * - an account takes at most `accountCeiling` failures per `accountWindow` from all addresses together
 *   (an attacker needs many addresses to reach it, and the window bounds how long it holds).
 *
 * Counted in PostgreSQL (sign_in_throttles, `sign_in_attempt()`), so every instance shares the counts and
 * parallel guesses cannot slip past; a successful sign-in clears its pair, and a password reset the account.
 * Unknown addresses count the same way, so the throttle tells nothing about which accounts exist.
 * The client address is the boot server's decision (server/http/client-address.ts).
 */
export const SIGN_IN_THROTTLE = {
  freeFailures: 10,
  backoffSeconds: 30,
  maxBackoffSeconds: 15 * 60,
  forgetAfter: '1 hour',
  accountCeiling: 100,
  accountWindow: '15 minutes',
} as const;

/** Too many failed sign-ins for this account (from this address); its message is what next-auth hands the form. */
export class SignInLockedError extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super('TooManyFailedSignIns');
    this.name = 'SignInLockedError';
  }
}

const hash = (text: string) => createHash('sha256').update(text).digest('hex');

/** The throttle keys: hashes, so the shared table holds neither email nor client addresses. */
export function signInThrottleKeys(email: string, clientAddress: string): { account: string; pair: string } {
  const canonical = email.trim().toLowerCase();
  const account = hash(canonical);
  // The pair's key starts with the account's hash, so a password reset can clear every address of it.
  return { account: `account:${account}`, pair: `pair:${account}:${hash(`${canonical}\n${clientAddress}`)}` };
}

/** Forgets an account's failures from every address (a password reset: the recovery path). */
export async function clearSignInThrottle(db: Db, email: string): Promise<void> {
  const { account } = signInThrottleKeys(email, '');
  const pairs = `pair:${account.slice('account:'.length)}:%`;
  await db.$executeRaw`DELETE FROM sign_in_throttles WHERE key = ${account} OR key LIKE ${pairs}`;
}

// Compared against when the email is unknown, so a missing account costs the same time as a wrong password.
let dummyHash: Promise<string> | undefined;

/**
 * Checks an operator's credentials; null for a wrong email or password alike.
 *
 * @throws SignInLockedError when this (account, address) is backing off or the account reached its ceiling;
 *   no password is checked then.
 */
export async function authenticateOperator(
  db: Db,
  email: string,
  password: string,
  clientAddress = 'unknown',
): Promise<{ id: string; email: string; name: string; sessionVersion: number; passwordChangeRequired: boolean } | null> {
  const parsed = operatorEmail.safeParse(email);
  if (!parsed.success) return null;
  const keys = signInThrottleKeys(parsed.data, clientAddress);
  const t = SIGN_IN_THROTTLE;
  // Counted before the password is checked, as a failure until it succeeds (row locks), so concurrent guesses share the limit.
  const [attempt] = await db.$queryRaw<{ allowed: boolean; retry_after_seconds: number }[]>`
    SELECT allowed, retry_after_seconds FROM sign_in_attempt(${keys.account}, ${keys.pair},
      ${t.freeFailures}::integer, make_interval(secs => ${t.backoffSeconds}), make_interval(secs => ${t.maxBackoffSeconds}),
      ${t.forgetAfter}::interval, ${t.accountCeiling}::integer, ${t.accountWindow}::interval)`;
  if (!attempt?.allowed) throw new SignInLockedError(attempt?.retry_after_seconds ?? 0);
  const operator = await db.operator.findUnique({ where: { email: parsed.data } });
  const valid = operator
    ? await verifyPassword(password, operator.passwordHash)
    : (await verifyPassword(password, await (dummyHash ??= hashPassword('not-a-real-password'))), false);
  if (!operator || !valid) {
    // Forgotten counters of any account go with the next failure, so the table holds only live ones.
    await db.$executeRaw`DELETE FROM sign_in_throttles
      WHERE COALESCE(blocked_until, last_failure_at, window_start) <= compute_now() - ${t.forgetAfter}::interval
        AND window_start <= compute_now() - ${t.accountWindow}::interval`;
    return null;
  }
  // The right password clears its own address and takes its attempt back from the account's count.
  await db.$executeRaw`DELETE FROM sign_in_throttles WHERE key = ${keys.pair}`;
  await db.$executeRaw`UPDATE sign_in_throttles SET failures = GREATEST(failures - 1, 0) WHERE key = ${keys.account}`;
  await db.$executeRaw`UPDATE operators SET last_sign_in_at = compute_now() WHERE id = ${operator.id}`;
  return {
    id: operator.id,
    email: operator.email,
    name: operator.name,
    sessionVersion: operator.sessionVersion,
    passwordChangeRequired: operator.passwordChangeRequired,
  };
}

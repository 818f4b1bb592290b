import { createHash } from 'node:crypto';
import type { Db } from '../db/client';
import { operatorEmail } from './email';
import { PasswordHashingBusyError } from './hash-slots';
import { hashPassword, verifyPassword } from './password';
import { hitRateLimit, secondsLeftInWindow } from '../db/rate-limits';
import { clearAccountThrottle, countSignInAttempt, forgetOldSignInCounters, giveSignInAttemptBack, recordSignIn } from './sign-in-sql';

/**
 * Failed sign-ins are throttled per (account, client address) with backoff, and per account with a
 * higher ceiling, so a stranger's guesses never lock the right password out from another address:
 *
 * - a pair gets `freeFailures` failures; each further one blocks that pair for `backoffSeconds` doubled per
 *   failure, at most `maxBackoffSeconds`; a pair with no failure for `forgetAfter` starts over;
 * - an account takes at most `accountCeiling` failures per `accountWindow` from all addresses together
 *   (an attacker needs many addresses to reach it, and the window bounds how long it holds);
 * - a client address takes at most `addressCeiling` failures per `addressWindow` over all the emails it
 *   tries (rate_limits, `rate_limit_hit()`), so guessing with ever-new emails, each with a fresh pair, is
 *   bounded too; a success gives its attempt back, so many operators behind one NAT are not held up.
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
  addressCeiling: 50,
  addressWindowSeconds: 15 * 60,
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

/** The per-address key in rate_limits (every email together): a hash, so the table holds no client address. */
export const signInAddressKey = (clientAddress: string) => `sign-in-address:${hash(clientAddress)}`;

/**
 * Counts one password check against the client address (every email together), before it runs.
 *
 * @throws SignInLockedError when the address reached its ceiling for the window.
 */
async function countAddressAttempt(db: Db, clientAddress: string): Promise<void> {
  // `unknown`: a request the boot server did not see (tests, the CLI in-process); no address to count.
  if (clientAddress === 'unknown') return;
  const t = SIGN_IN_THROTTLE;
  const key = signInAddressKey(clientAddress);
  if (await hitRateLimit(db, key, t.addressCeiling, t.addressWindowSeconds)) return;
  throw new SignInLockedError((await secondsLeftInWindow(db, key, t.addressWindowSeconds)) ?? t.addressWindowSeconds);
}

/** Gives an attempt back to the address, the account and the pair: it succeeded, or no password was checked. */
async function giveAttemptBack(db: Db, keys: { account: string; pair: string }, clientAddress: string, clearPair: boolean) {
  await giveSignInAttemptBack(db, keys, clientAddress === 'unknown' ? null : signInAddressKey(clientAddress), clearPair);
}

/** Forgets an account's failures from every address (a password reset: the recovery path). */
export async function clearSignInThrottle(db: Db, email: string): Promise<void> {
  const { account } = signInThrottleKeys(email, '');
  await clearAccountThrottle(db, account);
}

// Compared against when the email is unknown, so a missing account costs the same time as a wrong password.
let dummyHash: Promise<string> | undefined;
const dummyPasswordHash = () =>
  hashPassword('not-a-real-password').catch((error: unknown) => {
    dummyHash = undefined; // a busy moment is not remembered
    throw error;
  });

/**
 * Checks an operator's credentials; null for a wrong email or password alike.
 *
 * @throws SignInLockedError when this (account, address) is backing off, or the account or the address
 *   reached its ceiling; no password is checked then.
 * @throws PasswordHashingBusyError when too many password checks run at once (the attempt is given back).
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
  await countAddressAttempt(db, clientAddress);
  // Counted before the password is checked, as a failure until it succeeds (row locks), so concurrent guesses share the limit.
  const attempt = await countSignInAttempt(db, keys, t);
  if (!attempt?.allowed) throw new SignInLockedError(attempt?.retry_after_seconds ?? 0);
  const operator = await db.operator.findUnique({ where: { email: parsed.data } });
  let valid: boolean;
  try {
    valid = operator
      ? await verifyPassword(password, operator.passwordHash, { address: clientAddress })
      : (await verifyPassword(password, await (dummyHash ??= dummyPasswordHash()), { address: clientAddress }), false);
  } catch (error) {
    // Refused before any password was checked: not a failed guess.
    if (error instanceof PasswordHashingBusyError) await giveAttemptBack(db, keys, clientAddress, false);
    throw error;
  }
  if (!operator || !valid) {
    // Forgotten counters of any account go with the next failure, so the table holds only live ones.
    await forgetOldSignInCounters(db, t);
    return null;
  }
  // The right password clears its own address and takes its attempt back from the account's and address's counts.
  await giveAttemptBack(db, keys, clientAddress, true);
  await recordSignIn(db, operator.id);
  return {
    id: operator.id,
    email: operator.email,
    name: operator.name,
    sessionVersion: operator.sessionVersion,
    passwordChangeRequired: operator.passwordChangeRequired,
  };
}

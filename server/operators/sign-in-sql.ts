import { sql } from 'kysely';
import type { Tx } from '../db/client';
import { typed } from '../db/typed';

// The sign-in throttle's statements (server/operators/sign-in.ts), in the typed layer: `sign_in_attempt()` and
// `rate_limit_hit()` (migrations) do the counting under row locks; these read and give back.

/** The throttle's settings these statements take (SIGN_IN_THROTTLE). */
interface Throttle {
  freeFailures: number;
  backoffSeconds: number;
  maxBackoffSeconds: number;
  forgetAfter: string;
  accountCeiling: number;
  accountWindow: string;
}

/** One attempt of the (account, pair), counted as a failure until it succeeds: allowed, or the seconds to wait. */
export async function countSignInAttempt(db: Tx, keys: { account: string; pair: string }, t: Throttle) {
  return typed(db)
    .selectFrom(
      sql<{ allowed: boolean; retry_after_seconds: number }>`sign_in_attempt(${keys.account}, ${keys.pair},
        ${t.freeFailures}::integer, make_interval(secs => ${t.backoffSeconds}), make_interval(secs => ${t.maxBackoffSeconds}),
        ${t.forgetAfter}::interval, ${t.accountCeiling}::integer, ${t.accountWindow}::interval)`.as('attempt'),
    )
    .select(['attempt.allowed', 'attempt.retry_after_seconds'])
    .executeTakeFirst();
}

/** Gives an attempt back to the address, the account and the pair (or clears the pair). */
export async function giveSignInAttemptBack(
  db: Tx,
  keys: { account: string; pair: string },
  addressKey: string | null,
  clearPair: boolean,
) {
  const oneLess = (key: string) =>
    typed(db)
      .updateTable('sign_in_throttles')
      .set((eb) => ({ failures: sql<number>`GREATEST(${eb.ref('failures')} - 1, 0)` }))
      .where('key', '=', key)
      .execute();
  if (clearPair) await typed(db).deleteFrom('sign_in_throttles').where('key', '=', keys.pair).execute();
  else await oneLess(keys.pair);
  await oneLess(keys.account);
  if (addressKey !== null) {
    await typed(db)
      .updateTable('rate_limits')
      .set((eb) => ({ count: sql<number>`GREATEST(${eb.ref('count')} - 1, 0)` }))
      .where('key', '=', addressKey)
      .execute();
  }
}

/** Forgets the failures of the account `account` from every address (its pairs' keys start with its hash). */
export async function clearAccountThrottle(db: Tx, account: string): Promise<void> {
  const pairs = `pair:${account.slice('account:'.length)}:%`;
  await typed(db)
    .deleteFrom('sign_in_throttles')
    .where((eb) => eb.or([eb('key', '=', account), eb('key', 'like', pairs)]))
    .execute();
}

/** Deletes the counters of any account that are forgotten anyway, so the table holds only live ones. */
export async function forgetOldSignInCounters(db: Tx, t: Throttle): Promise<void> {
  await typed(db)
    .deleteFrom('sign_in_throttles')
    .where((eb) =>
      eb(eb.fn.coalesce('blocked_until', 'last_failure_at', 'window_start'), '<=', sql<Date>`compute_now() - ${t.forgetAfter}::interval`),
    )
    .where('window_start', '<=', sql<Date>`compute_now() - ${t.accountWindow}::interval`)
    .execute();
}

/** Records the operator's successful sign-in, at the database's clock. */
export async function recordSignIn(db: Tx, operatorId: string): Promise<void> {
  await typed(db)
    .updateTable('operators')
    .set({ last_sign_in_at: sql<Date>`compute_now()` })
    .where('id', '=', operatorId)
    .execute();
}

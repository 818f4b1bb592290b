import { randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { SIGN_IN_THROTTLE, SignInLockedError, authenticateOperator, createOperator, resetOperatorPassword } from './operators';
import { signInAddressKey, signInThrottleKeys } from './sign-in';

const PASSWORD = 'correct-horse-battery-staple';
const STRANGER = '203.0.113.7';
const OWNER = '198.51.100.20';
const EXTRA_ADDRESSES: string[] = [];
const FREE = SIGN_IN_THROTTLE.freeFailures;

async function operator() {
  const db = testDb();
  const t = await createTestTenant(db);
  const email = `op-${randomBytes(4).toString('hex')}@example.com`;
  await createOperator(db, { email, name: 'Op', password: PASSWORD, tenantId: t.tenantId, role: 'admin' });
  return email;
}

async function failTimes(email: string, n: number, address = STRANGER) {
  for (let i = 0; i < n; i++) expect(await authenticateOperator(testDb(), email, 'wrong-password-123', address)).toBeNull();
}

/** Ends a pair's current backoff, as if its wait had passed. */
async function waitOutBackoff(email: string, address: string) {
  await testDb().signInThrottle.update({
    where: { key: signInThrottleKeys(email, address).pair },
    data: { blockedUntil: new Date(Date.now() - 1000) },
  });
}

async function backoffSeconds(email: string, address: string) {
  const row = await testDb().signInThrottle.findUniqueOrThrow({ where: { key: signInThrottleKeys(email, address).pair } });
  return Math.round((row.blockedUntil!.getTime() - row.lastFailureAt!.getTime()) / 1000);
}

// Each test runs 10 to 25 scrypt hashes (32 MiB each) one after the other: about 3 s on an idle machine, past
// the default 30 s on a loaded 2-core one, whichever way the throttle's SQL is sent.
describe('sign-in throttling', { timeout: 120_000 }, () => {
  // These tests share their addresses; each starts with the addresses' own ceiling unspent (it has its own test).
  beforeEach(async () => {
    const keys = [STRANGER, OWNER, ...EXTRA_ADDRESSES].map(signInAddressKey);
    await testDb().$executeRaw`DELETE FROM rate_limits WHERE key = ANY(${keys})`;
  });

  it(`a stranger's ${FREE} bad attempts lock only the stranger's address: the right password from another address still works`, async () => {
    const email = await operator();
    await failTimes(email, FREE, STRANGER);
    // The stranger now backs off, even with the right password; another spelling of the address is the same account.
    await expect(authenticateOperator(testDb(), email, PASSWORD, STRANGER)).rejects.toThrow(SignInLockedError);
    await expect(authenticateOperator(testDb(), ` ${email.toUpperCase()} `, PASSWORD, STRANGER)).rejects.toThrow('TooManyFailedSignIns');
    expect(await authenticateOperator(testDb(), email, PASSWORD, OWNER)).toMatchObject({ email });
    // The owner's success does not lift the stranger's backoff.
    await expect(authenticateOperator(testDb(), email, PASSWORD, STRANGER)).rejects.toThrow(SignInLockedError);
  });

  it('backs off exponentially per address, up to the maximum, and says how long to wait', async () => {
    const email = await operator();
    await failTimes(email, FREE, STRANGER);
    expect(await backoffSeconds(email, STRANGER)).toBe(SIGN_IN_THROTTLE.backoffSeconds);
    const locked = await authenticateOperator(testDb(), email, 'wrong-password-123', STRANGER).catch((e: unknown) => e);
    expect(locked).toBeInstanceOf(SignInLockedError);
    expect((locked as SignInLockedError).retryAfterSeconds).toBeGreaterThan(SIGN_IN_THROTTLE.backoffSeconds - 5);
    expect((locked as SignInLockedError).retryAfterSeconds).toBeLessThanOrEqual(SIGN_IN_THROTTLE.backoffSeconds);
    const seen: number[] = [];
    for (let i = 0; i < 7; i++) {
      await waitOutBackoff(email, STRANGER);
      await failTimes(email, 1, STRANGER);
      seen.push(await backoffSeconds(email, STRANGER));
    }
    // 60, 120, 240, 480 s, then the 15-minute maximum.
    expect(seen).toEqual(
      [2, 4, 8, 16, 32, 64, 128].map((k) => Math.min(k * SIGN_IN_THROTTLE.backoffSeconds, SIGN_IN_THROTTLE.maxBackoffSeconds)),
    );
  });

  it(
    `the account has a ceiling of ${SIGN_IN_THROTTLE.accountCeiling} failures from all addresses together`,
    { timeout: 120_000 },
    async () => {
      const email = await operator();
      const ceiling = SIGN_IN_THROTTLE.accountCeiling;
      for (let i = 0; i < ceiling; i += 10) {
        await Promise.all(Array.from({ length: 10 }, (_, j) => failTimes(email, 1, `192.0.2.${i + j}`)));
      }
      await expect(authenticateOperator(testDb(), email, PASSWORD, OWNER)).rejects.toThrow(SignInLockedError);
      // The window passes: the right password works again.
      await testDb().signInThrottle.update({
        where: { key: signInThrottleKeys(email, '').account },
        data: { windowStart: new Date(Date.now() - 16 * 60_000) },
      });
      expect(await authenticateOperator(testDb(), email, PASSWORD, OWNER)).toMatchObject({ email });
    },
  );

  it('a successful sign-in clears its address, so only consecutive failures count', async () => {
    const email = await operator();
    await failTimes(email, FREE - 1);
    expect(await authenticateOperator(testDb(), email, PASSWORD, STRANGER)).toMatchObject({ email });
    await failTimes(email, FREE - 1);
    expect(await authenticateOperator(testDb(), email, PASSWORD, STRANGER)).toMatchObject({ email });
  });

  it('counts unknown emails the same way, and never touches another account', async () => {
    const unknown = `nobody-${randomBytes(4).toString('hex')}@example.com`;
    await failTimes(unknown, FREE);
    await expect(authenticateOperator(testDb(), unknown, PASSWORD, STRANGER)).rejects.toThrow(SignInLockedError);
    const other = await operator();
    expect(await authenticateOperator(testDb(), other, PASSWORD, STRANGER)).toMatchObject({ email: other });
  });

  it('holds against parallel guesses: exactly the free attempts are checked, the rest are refused', async () => {
    const email = await operator();
    const results = await Promise.allSettled(
      Array.from({ length: 30 }, () => authenticateOperator(testDb(), email, 'wrong-password-123', STRANGER)),
    );
    expect(results.filter((r) => r.status === 'fulfilled' && r.value === null)).toHaveLength(FREE);
    expect(results.filter((r) => r.status === 'rejected' && r.reason instanceof SignInLockedError)).toHaveLength(30 - FREE);
  });

  it('refuses text that is not an email address without counting it', async () => {
    const text = `not an email ${randomBytes(4).toString('hex')}`;
    expect(await authenticateOperator(testDb(), text, PASSWORD, STRANGER)).toBeNull();
    const keys = signInThrottleKeys(text, STRANGER);
    expect(await testDb().signInThrottle.count({ where: { key: { in: [keys.account, keys.pair] } } })).toBe(0);
  });

  it('is lifted for every address by a password reset (the recovery path)', async () => {
    const email = await operator();
    await failTimes(email, FREE, STRANGER);
    await failTimes(email, FREE, OWNER);
    const fresh = await resetOperatorPassword(testDb(), email);
    expect(await authenticateOperator(testDb(), email, fresh, OWNER)).toMatchObject({ email });
    expect(await authenticateOperator(testDb(), email, fresh, STRANGER)).toMatchObject({ email });
  });

  it('keeps neither email nor client address in the shared table', async () => {
    const email = await operator();
    await failTimes(email, 1);
    const keys = signInThrottleKeys(email, STRANGER);
    const rows = await testDb().signInThrottle.findMany({ where: { key: { in: [keys.account, keys.pair] } } });
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.key).not.toContain(email);
      expect(row.key).not.toContain(STRANGER);
      expect(row.key).toMatch(/^(account:[0-9a-f]{64}|pair:[0-9a-f]{64}:[0-9a-f]{64})$/);
    }
  });
});

import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { SIGN_IN_FAILURES, SignInLockedError, authenticateOperator, createOperator, resetOperatorPassword, signInFailuresKey } from './operators';

const PASSWORD = 'correct-horse-battery-staple';

async function operator() {
  const db = testDb();
  const t = await createTestTenant(db);
  const email = `op-${randomBytes(4).toString('hex')}@example.com`;
  await createOperator(db, { email, name: 'Op', password: PASSWORD, tenantId: t.tenantId, role: 'admin' });
  return email;
}

async function failTimes(email: string, n: number) {
  for (let i = 0; i < n; i++) expect(await authenticateOperator(testDb(), email, 'wrong-password-123')).toBeNull();
}

describe('sign-in failures', () => {
  it(`lock an email after ${SIGN_IN_FAILURES.limit} failures, even for the right password, until the window passes`, async () => {
    const email = await operator();
    await failTimes(email, SIGN_IN_FAILURES.limit);
    await expect(authenticateOperator(testDb(), email, PASSWORD)).rejects.toThrow(SignInLockedError);
    // Another spelling of the same address is the same account.
    await expect(authenticateOperator(testDb(), ` ${email.toUpperCase()} `, PASSWORD)).rejects.toThrow('TooManyFailedSignIns');
    await testDb().rateLimit.update({ where: { key: signInFailuresKey(email) }, data: { windowStart: new Date(Date.now() - 16 * 60_000) } });
    expect(await authenticateOperator(testDb(), email, PASSWORD)).toMatchObject({ email });
  });

  it('are cleared by a successful sign-in, so only consecutive failures count', async () => {
    const email = await operator();
    await failTimes(email, SIGN_IN_FAILURES.limit - 1);
    expect(await authenticateOperator(testDb(), email, PASSWORD)).toMatchObject({ email });
    await failTimes(email, SIGN_IN_FAILURES.limit - 1);
    expect(await authenticateOperator(testDb(), email, PASSWORD)).toMatchObject({ email });
  });

  it('lock unknown emails the same way, and never touch another account', async () => {
    const unknown = `nobody-${randomBytes(4).toString('hex')}@example.com`;
    await failTimes(unknown, SIGN_IN_FAILURES.limit);
    await expect(authenticateOperator(testDb(), unknown, PASSWORD)).rejects.toThrow(SignInLockedError);
    const other = await operator();
    expect(await authenticateOperator(testDb(), other, PASSWORD)).toMatchObject({ email: other });
  });

  it('hold against parallel guesses: exactly the limit is checked, the rest are locked out', async () => {
    const email = await operator();
    const results = await Promise.allSettled(Array.from({ length: 30 }, () => authenticateOperator(testDb(), email, 'wrong-password-123')));
    expect(results.filter((r) => r.status === 'fulfilled' && r.value === null)).toHaveLength(SIGN_IN_FAILURES.limit);
    expect(results.filter((r) => r.status === 'rejected' && r.reason instanceof SignInLockedError)).toHaveLength(30 - SIGN_IN_FAILURES.limit);
  });

  it('refuse text that is not an email address without counting it', async () => {
    const text = `not an email ${randomBytes(4).toString('hex')}`;
    expect(await authenticateOperator(testDb(), text, PASSWORD)).toBeNull();
    expect(await testDb().rateLimit.count({ where: { key: signInFailuresKey(text) } })).toBe(0);
  });

  it('are lifted by a password reset (the recovery path)', async () => {
    const email = await operator();
    await failTimes(email, SIGN_IN_FAILURES.limit);
    const fresh = await resetOperatorPassword(testDb(), email);
    expect(await authenticateOperator(testDb(), email, fresh)).toMatchObject({ email });
  });

  it('keep no email address in the shared table', async () => {
    const email = await operator();
    await failTimes(email, 1);
    const rows = await testDb().rateLimit.findMany({ where: { key: signInFailuresKey(email) } });
    expect(rows).toHaveLength(1);
    expect(rows[0]!.key).not.toContain(email);
    expect(rows[0]!.key).toMatch(/^sign-in-failures:[0-9a-f]{64}$/);
  });
});

import { randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { tenantWithAdmin } from '../../test/operator-fixtures';
import { acceptInvitation, createInvitation } from './invitations';
import { PASSWORD_HASHING, PasswordHashingBusyError } from './hash-slots';
import { SIGN_IN_THROTTLE, SignInLockedError, authenticateOperator, createOperator } from './operators';
import { hashPassword } from './password';

/** Every scrypt the code under test starts, counted, with how many ran at once (the real scrypt does the work). */
const scrypts = vi.hoisted(() => ({ started: 0, running: 0, peak: 0 }));
vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof import('node:crypto')>();
  const scrypt = (...args: unknown[]) => {
    const done = args.pop() as (error: Error | null, key: Buffer) => void;
    scrypts.started++;
    scrypts.peak = Math.max(scrypts.peak, ++scrypts.running);
    (crypto.scrypt as (...a: unknown[]) => void)(...args, (error: Error | null, key: Buffer) => {
      scrypts.running--;
      done(error, key);
    });
  };
  return { ...crypto, default: { ...crypto, scrypt }, scrypt };
});

const PASSWORD = 'correct-horse-battery-staple';
const email = (label: string) => `${label}-${randomBytes(4).toString('hex')}@example.com`;
const address = () => `203.0.113.9-${randomBytes(4).toString('hex')}`;

beforeEach(() => {
  scrypts.peak = scrypts.running;
});

describe('the cost of password hashing, unauthenticated', () => {
  it('a bogus invitation link costs no password hash: the token is looked up first', async () => {
    const db = testDb();
    const { t, admin } = await tenantWithAdmin();
    const invitation = await createInvitation(db, admin, {
      tenantId: t.tenantId,
      email: email('new'),
      role: 'viewer',
    });
    const forged = invitation.token.replace(/\.(.)/, (_, c: string) => `.${c === 'A' ? 'B' : 'A'}`);
    const unknown = `bcinv_inv_${'0'.repeat(26)}.${'A'.repeat(43)}`;
    const before = scrypts.started;
    for (const token of [unknown, forged]) {
      expect(await failure(acceptInvitation(db, { token, name: 'Someone', password: PASSWORD }, address()))).toMatchObject({
        code: 'NOT_FOUND',
      });
    }
    expect(scrypts.started).toBe(before);
    // The real link does hash (the counting sees scrypt at all).
    await acceptInvitation(db, { token: invitation.token, name: 'Someone', password: PASSWORD }, address());
    expect(scrypts.started).toBeGreaterThan(before);
  }, 60_000);

  it(`runs at most ${PASSWORD_HASHING.perProcess} hashes at once in a process; the rest wait their turn`, async () => {
    const n = PASSWORD_HASHING.perProcess * 3;
    const before = scrypts.started;
    const hashes = await Promise.all(Array.from({ length: n }, (_, i) => hashPassword(`password-number-${i}`)));
    expect(new Set(hashes).size).toBe(n);
    expect(scrypts.started - before).toBe(n);
    expect(scrypts.peak).toBeLessThanOrEqual(PASSWORD_HASHING.perProcess);
  }, 60_000);

  it(`lets one client address run at most ${PASSWORD_HASHING.perAddress} hashes at once and queue a few, refusing more without hashing`, async () => {
    const busy = address();
    const before = scrypts.started;
    const queued = PASSWORD_HASHING.perAddress + PASSWORD_HASHING.perAddressQueue;
    const results = await Promise.allSettled(Array.from({ length: queued + 2 }, () => hashPassword(PASSWORD, { address: busy })));
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused).toHaveLength(2);
    for (const r of refused) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(PasswordHashingBusyError);
    expect(scrypts.started - before).toBe(queued);
    expect(scrypts.peak).toBeLessThanOrEqual(PASSWORD_HASHING.perAddress);
    // Its share used up, another address still hashes.
    expect(await hashPassword(PASSWORD, { address: address() })).toMatch(/^scrypt\$/);
  }, 60_000);

  it(`bounds sign-in with ever-new emails per client address (${SIGN_IN_THROTTLE.addressCeiling} failures), not per email`, async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const real = email('real');
    await createOperator(db, { email: real, name: 'Real', password: PASSWORD, tenantId: t.tenantId, role: 'viewer' });
    const guesser = address();
    for (let i = 0; i < SIGN_IN_THROTTLE.addressCeiling; i++) {
      expect(await authenticateOperator(db, email(`new-${i}`), 'wrong-password-123', guesser)).toBeNull();
    }
    const before = scrypts.started;
    await expect(authenticateOperator(db, email('yet-another'), 'wrong-password-123', guesser)).rejects.toThrow(SignInLockedError);
    await expect(authenticateOperator(db, real, PASSWORD, guesser)).rejects.toThrow(SignInLockedError);
    expect(scrypts.started).toBe(before);
    // Another address is not held up, and a success gives its attempt back.
    const office = address();
    for (let i = 0; i < SIGN_IN_THROTTLE.addressCeiling + 5; i++)
      expect(await authenticateOperator(db, real, PASSWORD, office)).toMatchObject({ email: real });
  }, 300_000);
});

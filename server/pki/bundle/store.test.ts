import { describe, expect, it } from 'vitest';
import { db, useOwnDatabase } from '../../../test/own-database';
import { DomainError } from '../../../protocol/errors';
import { hasPki, initPki, loadPki, PKI_BUNDLE_ID } from './store';

// The bundle is a singleton row, so this file works in a database of its own rather than the shared one.
const secret = 'a-long-enough-test-secret-0123456789-abcdefghij';
useOwnDatabase('pki_store');

async function rejection(promise: Promise<unknown>): Promise<DomainError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}

// Each seal and open derives a key with scrypt N=2^17: seconds on a busy machine.
describe('PKI store', { timeout: 120_000 }, () => {
  it('reports no PKI before init, and loadPki says to run pki init', async () => {
    expect(await hasPki(db)).toBe(false);
    const error = await rejection(loadPki(db, secret));
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.message).toMatch(/^No PKI bundle: run better-compute pki init/);
  });

  it('validates before writing anything', async () => {
    expect((await rejection(initPki(db, { trustDomain: 'Bad_Domain', secret }))).field).toBe('trustDomain');
    expect((await rejection(initPki(db, { trustDomain: 'compute.example.com', secret: 'short' }))).field).toBe('BETTER_COMPUTE_SECRET');
    expect(await hasPki(db)).toBe(false);
  });

  it('lets exactly one of two concurrent inits win, and stores the bundle sealed', async () => {
    const results = await Promise.allSettled([
      initPki(db, { trustDomain: 'compute.example.com', secret }),
      initPki(db, { trustDomain: 'other.example.com', secret }),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]!.reason).toMatchObject({ code: 'ALREADY_EXISTS' });
    expect((lost[0]!.reason as Error).message).toMatch(/^A PKI bundle already exists .*refusing to overwrite it$/);

    const winner = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof initPki>>>).value;
    const rows = await db.pkiBundle.findMany();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: PKI_BUNDLE_ID, trustDomain: winner.trustDomain });
    expect(Buffer.from(rows[0]!.sealed).subarray(0, 6).toString('latin1')).toBe('BCPKI2');
    expect(Buffer.from(rows[0]!.sealed).includes('PRIVATE KEY')).toBe(false);
    expect(await hasPki(db)).toBe(true);
    expect(await loadPki(db, secret)).toEqual(winner);
  });

  it('never overwrites an existing bundle', async () => {
    const before = await db.pkiBundle.findUniqueOrThrow({ where: { id: PKI_BUNDLE_ID } });
    const error = await rejection(initPki(db, { trustDomain: 'third.example.com', secret }));
    expect(error.code).toBe('ALREADY_EXISTS');
    const after = await db.pkiBundle.findUniqueOrThrow({ where: { id: PKI_BUNDLE_ID } });
    expect(Buffer.from(after.sealed).equals(Buffer.from(before.sealed))).toBe(true);
  });

  it('keeps a surrounding transaction usable after refusing', async () => {
    await db.$transaction(async (tx) => {
      await rejection(initPki(tx, { trustDomain: 'fourth.example.com', secret }));
      expect(await hasPki(tx)).toBe(true);
    });
  });

  it('refuses the wrong secret', async () => {
    const error = await rejection(loadPki(db, 'not-the-secret-at-all'));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.field).toBe('BETTER_COMPUTE_SECRET');
  });
});

import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../../protocol/errors';
import { createPkiBundle } from './bundle';
import { isCurrentSeal, MIN_SECRET_LENGTH, openPkiBundle, SEAL_SCRYPT, sealParameters, sealPkiBundle } from './seal';
import { sealPkiBundleV1 } from '../../../test/pki/legacy';
import { thrownBy } from '../../../test/pki/fixtures';

const bundle = createPkiBundle({ trustDomain: 'compute.example.com' });
const secret = 'correct horse battery staple, and then some more words';
const sealed = sealPkiBundle(bundle, secret);

function expectWrongSecret(error: unknown, secretUsed: string) {
  expect(error).toBeInstanceOf(DomainError);
  const domainError = error as DomainError;
  expect(domainError.code).toBe('INVALID_ARGUMENT');
  expect(domainError.field).toBe('BETTER_COMPUTE_SECRET');
  expect(domainError.message).toBe('BETTER_COMPUTE_SECRET does not open the PKI bundle (wrong secret?)');
  expect(domainError.message).not.toContain(secretUsed);
  expect(domainError.cause).toBeUndefined();
}

describe('sealPkiBundle and openPkiBundle', () => {
  it('round-trips the bundle', () => {
    expect(openPkiBundle(sealed, secret)).toEqual(bundle);
    expect(openPkiBundle(new Uint8Array(sealed), secret)).toEqual(bundle);
  });

  it('writes the versioned header with the KDF parameters (scrypt N=2^17, r=8, p=1) and no plaintext', () => {
    expect(sealed.subarray(0, 6).toString('latin1')).toBe('BCPKI2');
    expect([...sealed.subarray(6, 9)]).toEqual([17, 8, 1]);
    expect(SEAL_SCRYPT.logN).toBeGreaterThanOrEqual(17);
    expect(sealParameters(sealed)).toEqual({ logN: 17, r: 8, p: 1 });
    expect(isCurrentSeal(sealed)).toBe(true);
    expect(sealed.length).toBe(6 + 3 + 16 + 12 + 16 + Buffer.byteLength(JSON.stringify(bundle)));
    expect(sealed.includes('PRIVATE KEY')).toBe(false);
    expect(sealed.includes('compute.example.com')).toBe(false);
  });

  it('uses a fresh salt and iv every time', () => {
    const again = sealPkiBundle(bundle, secret);
    expect(again.subarray(9, 37).equals(sealed.subarray(9, 37))).toBe(false);
    expect(openPkiBundle(again, secret)).toEqual(bundle);
  });

  it('refuses a wrong secret with the documented error', () => {
    expectWrongSecret(
      thrownBy(() => openPkiBundle(sealed, 'correct horse battery stapler, and then some more words')),
      'stapler',
    );
  });

  it('refuses a tampered header, tag or ciphertext as a failure to open', () => {
    // The parameters (r), the salt, the iv, the tag and the ciphertext: each is authenticated.
    for (const offset of [7, 9 + 1, 9 + 16 + 1, 9 + 16 + 12 + 1, sealed.length - 1]) {
      const tampered = Buffer.from(sealed);
      tampered[offset]! ^= 0x01;
      expectWrongSecret(
        thrownBy(() => openPkiBundle(tampered, secret)),
        secret,
      );
    }
  });

  it('tells malformed bytes from a wrong secret', () => {
    const notOurs = Buffer.from(sealed);
    notOurs.write('BCPKI9', 0, 'latin1');
    for (const bytes of [notOurs, sealed.subarray(0, 40), Buffer.alloc(0)]) {
      const error = thrownBy(() => openPkiBundle(bytes, secret)) as DomainError;
      expect(error.code).toBe('INVALID_CONFIG');
      expect(error.message).toMatch(/malformed or of an unknown format version/);
    }
  });

  it(`refuses to seal under a secret shorter than ${MIN_SECRET_LENGTH} characters or repetitive, without echoing it`, () => {
    // A periodic run of ten letters has enough length and distinct characters, and is still refused (an estimate).
    for (const weak of [
      'short-secret-15',
      'x'.repeat(16) + '0123456789abcdef',
      'ab'.repeat(40),
      'abcdefghij'.repeat(5).slice(0, MIN_SECRET_LENGTH),
    ]) {
      const error = thrownBy(() => sealPkiBundle(bundle, weak)) as DomainError;
      expect(error.code).toBe('INVALID_ARGUMENT');
      expect(error.field).toBe('BETTER_COMPUTE_SECRET');
      expect(error.message).not.toContain(weak);
    }
    expect(MIN_SECRET_LENGTH).toBeGreaterThanOrEqual(43);
    expect(() => sealPkiBundle(bundle, randomBytes(32).toString('base64url'))).not.toThrow();
  });

  it('opens a version 1 bundle as older releases sealed it (N=2^15), which is not current', () => {
    const old = sealPkiBundleV1(bundle, 'an-old-16-chars!');
    expect(old.subarray(0, 6).toString('latin1')).toBe('BCPKI1');
    expect(openPkiBundle(old, 'an-old-16-chars!')).toEqual(bundle);
    expect(sealParameters(old)).toEqual({ logN: 15, r: 8, p: 1 });
    expect(isCurrentSeal(old)).toBe(false);
    expectWrongSecret(
      thrownBy(() => openPkiBundle(old, 'an-old-16-chars?')),
      'an-old-16-chars?',
    );
  });

  it('refuses a header asking for KDF parameters out of bounds as malformed, before deriving anything', () => {
    for (const [index, value] of [
      [6, 30],
      [6, 14],
      [7, 0],
      [8, 0],
      [8, 200],
    ] as const) {
      const odd = Buffer.from(sealed);
      odd[index] = value;
      const error = thrownBy(() => openPkiBundle(odd, secret)) as DomainError;
      expect(error.code).toBe('INVALID_CONFIG');
    }
  });
});

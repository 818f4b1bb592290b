import { describe, expect, it } from 'vitest';
import { DomainError } from '../errors';
import { createPkiBundle } from './bundle';
import { MIN_SECRET_LENGTH, openPkiBundle, sealPkiBundle } from './seal';
import { thrownBy } from './testing/fixtures';

const bundle = createPkiBundle({ trustDomain: 'compute.example.com' });
const secret = 'correct horse battery staple';
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

  it('writes the versioned header and no plaintext', () => {
    expect(sealed.subarray(0, 6).toString('latin1')).toBe('BCPKI1');
    expect(sealed.length).toBe(6 + 16 + 12 + 16 + Buffer.byteLength(JSON.stringify(bundle)));
    expect(sealed.includes('PRIVATE KEY')).toBe(false);
    expect(sealed.includes('compute.example.com')).toBe(false);
  });

  it('uses a fresh salt and iv every time', () => {
    const again = sealPkiBundle(bundle, secret);
    expect(again.subarray(6, 34).equals(sealed.subarray(6, 34))).toBe(false);
    expect(openPkiBundle(again, secret)).toEqual(bundle);
  });

  it('refuses a wrong secret with the documented error', () => {
    expectWrongSecret(thrownBy(() => openPkiBundle(sealed, 'correct horse battery stapler')), 'stapler');
  });

  it('refuses a tampered header, tag or ciphertext as a failure to open', () => {
    for (const offset of [7, 6 + 16 + 1, 6 + 16 + 12 + 1, sealed.length - 1]) {
      const tampered = Buffer.from(sealed);
      tampered[offset] ^= 0x01;
      expectWrongSecret(thrownBy(() => openPkiBundle(tampered, secret)), secret);
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

  it(`refuses to seal under a secret shorter than ${MIN_SECRET_LENGTH} characters, without echoing it`, () => {
    const error = thrownBy(() => sealPkiBundle(bundle, 'short-secret-15')) as DomainError;
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.field).toBe('BETTER_COMPUTE_SECRET');
    expect(error.message).not.toContain('short-secret-15');
    expect(() => sealPkiBundle(bundle, 'x'.repeat(MIN_SECRET_LENGTH))).not.toThrow();
  });
});

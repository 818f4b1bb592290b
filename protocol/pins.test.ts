import { generateKeyPairSync, webcrypto } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { spkiPin } from './pins';
import { openssl } from '../server/pki/testing/openssl';

function opensslPin(spki: Buffer): string {
  const digest = openssl(['dgst', '-sha256', '-binary'], {}, openssl(['pkey', '-pubin', '-inform', 'der', '-outform', 'der'], {}, spki));
  return `sha256/${digest.toString('base64')}`;
}

describe('spkiPin', () => {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });

  it('equals what openssl computes for the DER SubjectPublicKeyInfo', () => {
    const pin = spkiPin(spki);
    expect(pin).toMatch(/^sha256\/[A-Za-z0-9+/]{43}=$/);
    expect(pin).toBe(opensslPin(spki));
  });

  it('gives the same pin for the public key, the private key, PEM and a WebCrypto key', async () => {
    const pin = spkiPin(spki);
    expect(spkiPin(publicKey)).toBe(pin);
    expect(spkiPin(privateKey)).toBe(pin);
    expect(spkiPin(privateKey.export({ type: 'pkcs8', format: 'pem' }) as string)).toBe(pin);
    expect(spkiPin(publicKey.export({ type: 'spki', format: 'pem' }) as string)).toBe(pin);
    const cryptoKey = await webcrypto.subtle.importKey('spki', spki, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify']);
    expect(spkiPin(cryptoKey)).toBe(pin);
  });

  it('pins RSA keys too, matching openssl', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'der' });
    expect(spkiPin(rsa)).toBe(opensslPin(rsa));
  });

  it('refuses bytes that are not a SubjectPublicKeyInfo, without echoing them', () => {
    expect(() => spkiPin(new Uint8Array([1, 2, 3]))).toThrow('key: DER bytes are not a SubjectPublicKeyInfo');
    expect(() => spkiPin('not a pem')).toThrow(/^key: PEM is not/);
  });
});

import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { p256PrivateScalar } from './p256-private';

describe('p256PrivateScalar', () => {
  it('reads the private scalar a JWK export would give, for generated and imported keys', () => {
    const generated = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const imported = createPrivateKey(generated.export({ type: 'pkcs8', format: 'pem' }));
    for (const key of [generated, imported]) {
      const d = Buffer.from(imported.export({ format: 'jwk' }).d!, 'base64url');
      expect(p256PrivateScalar(key).equals(d)).toBe(true);
    }
  });

  it('refuses a key that is not P-256', () => {
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey;
    expect(() => p256PrivateScalar(p384)).toThrow(/32 bytes/);
  });
});

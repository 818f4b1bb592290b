import { generateKeyPairSync } from 'node:crypto';
import { compactDecrypt, decodeProtectedHeader } from 'jose';
import { describe, expect, it } from 'vitest';
import { openSeal } from '../server/join/crypto/open-seal';
import { generateNodeKeyAndCsr } from './keys';
import { sealToken, sealTokenSync, type EncryptionJwk } from './seal-token';

const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = publicKey.export({ format: 'jwk' }) as EncryptionJwk;
const TOKEN = 'bcjt_jt_01k5w7hq3x4m2v8r9t6y5e4d3c.secret';
/** The protected header of a seal made at 1764432000 for the CSR hash `csr` (protocol.md). */
const header = (csr: string) => ({
  alg: 'ECDH-ES+A256KW',
  enc: 'A256GCM',
  typ: 'bcjt+jwe',
  iat: 1764432000,
  csr,
  epk: { kty: 'EC', crv: 'P-256' },
});

describe('sealToken', () => {
  it('seals to the encryption key with the protocol header', async () => {
    const { csrSha256 } = generateNodeKeyAndCsr();
    const sealed = await sealToken(TOKEN, jwk, csrSha256, new Date('2025-11-29T16:00:00.900Z'));
    expect(decodeProtectedHeader(sealed)).toMatchObject(header(csrSha256));
    expect(openSeal(sealed, { encryptionKey: privateKey, csrSha256 })).toBe(TOKEN);
    const { plaintext } = await compactDecrypt(sealed, privateKey);
    expect(new TextDecoder().decode(plaintext)).toBe(TOKEN);
    expect(decodeProtectedHeader(await sealToken(TOKEN, jwk, csrSha256, 1764432000)).iat).toBe(1764432000);
  });

  it('refuses a private key, another curve and a malformed CSR hash', async () => {
    const csr = 'ab'.repeat(32);
    await expect(sealToken(TOKEN, privateKey.export({ format: 'jwk' }) as never, csr)).rejects.toThrow(/public EC P-256/);
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey.export({ format: 'jwk' });
    await expect(sealToken(TOKEN, p384 as never, csr)).rejects.toThrow(/P-256/);
    await expect(sealToken(TOKEN, jwk, csr.toUpperCase())).rejects.toThrow(/csrSha256/);
  });
});

describe('sealTokenSync', () => {
  it('makes a seal that jose and openSeal both open', async () => {
    const { csrSha256 } = generateNodeKeyAndCsr();
    const sealed = sealTokenSync(TOKEN, jwk, csrSha256, 1764432000);
    expect(decodeProtectedHeader(sealed)).toMatchObject(header(csrSha256));
    const { plaintext } = await compactDecrypt(sealed, privateKey, { keyManagementAlgorithms: ['ECDH-ES+A256KW'] });
    expect(new TextDecoder().decode(plaintext)).toBe(TOKEN);
    expect(openSeal(sealed, { encryptionKey: privateKey, csrSha256 })).toBe(TOKEN);
    expect(sealTokenSync(TOKEN, jwk, csrSha256)).not.toBe(sealTokenSync(TOKEN, jwk, csrSha256));
  });

  it('validates its inputs like sealToken', () => {
    expect(() => sealTokenSync(TOKEN, privateKey.export({ format: 'jwk' }) as never, 'ab'.repeat(32))).toThrow(/public EC P-256/);
    expect(() => sealTokenSync(TOKEN, jwk, 'nope')).toThrow(/csrSha256/);
  });
});

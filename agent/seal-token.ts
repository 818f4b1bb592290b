import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { CompactEncrypt } from 'jose';

/** The public half of the JoinService encryption key, as `join.encryptionJwk` publishes it. */
export interface EncryptionJwk {
  readonly kty: 'EC';
  readonly crv: 'P-256';
  readonly x: string;
  readonly y: string;
}

const importedKeys = new Map<string, KeyObject>();

/** Imports the JWK once per key: every simulated agent in a process seals to the same key. */
function importEncryptionKey(jwk: EncryptionJwk): KeyObject {
  if (jwk?.kty !== 'EC' || jwk.crv !== 'P-256' || 'd' in jwk) {
    throw new Error('The join encryption key must be a public EC P-256 JWK');
  }
  const id = `${jwk.x}.${jwk.y}`;
  let key = importedKeys.get(id);
  if (!key) {
    key = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y } as JsonWebKey, format: 'jwk' });
    if (importedKeys.size >= 16) importedKeys.clear();
    importedKeys.set(id, key);
  }
  return key;
}

/**
 * Seals a bearer join token to the JoinService encryption key: a compact JWE with `alg: ECDH-ES+A256KW`,
 * `enc: A256GCM` and the protected header `{ typ: 'bcjt+jwe', iat, csr }`, where `csr` binds the seal to
 * the CSR sent in the same call. `now` is a Date or Unix seconds and defaults to the current time. Verify
 * the JWK against `join_encryption_key_pin` first (`loadJoinEncryptionKey`).
 */
export async function sealToken(
  token: string,
  encryptionPublicJwk: EncryptionJwk,
  csrSha256: string,
  now: Date | number = new Date(),
): Promise<string> {
  if (!/^[0-9a-f]{64}$/.test(csrSha256)) throw new Error('csrSha256 must be lowercase hex SHA-256');
  const iat = typeof now === 'number' ? Math.floor(now) : Math.floor(now.getTime() / 1000);
  return new CompactEncrypt(new TextEncoder().encode(token))
    .setProtectedHeader({ alg: 'ECDH-ES+A256KW', enc: 'A256GCM', typ: 'bcjt+jwe', iat, csr: csrSha256 })
    .encrypt(importEncryptionKey(encryptionPublicJwk));
}

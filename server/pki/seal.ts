import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';
import { DomainError } from '../errors';
import type { PkiBundle } from './bundle';
import { parsePkiBundle } from './bundle-schema';

/**
 * Sealed bundle layout, version 1:
 * `"BCPKI1" (6) | salt (16) | iv (12) | tag (16) | AES-256-GCM ciphertext of the bundle's UTF-8 JSON`.
 * The key is scrypt(secret, salt, N=2^15, r=8, p=1); the magic, salt and iv are the GCM additional data, so the
 * header cannot be altered without failing authentication. A new KDF or cipher means a new magic.
 */
const MAGIC = Buffer.from('BCPKI1', 'latin1');
const SALT_BYTES = 16;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = MAGIC.length + SALT_BYTES + IV_BYTES;
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;

/** Shortest `BETTER_COMPUTE_SECRET` accepted for sealing. */
export const MIN_SECRET_LENGTH = 16;

/**
 * Encrypts `bundle` under `secret` (normally `BETTER_COMPUTE_SECRET`). scrypt makes each guess of the secret
 * cost about 32 MiB and tens of milliseconds, so a stolen database row resists offline guessing.
 *
 * @throws DomainError `INVALID_ARGUMENT` (field `BETTER_COMPUTE_SECRET`) when the secret is shorter than
 *   {@link MIN_SECRET_LENGTH} characters.
 */
export function sealPkiBundle(bundle: PkiBundle, secret: string): Buffer {
  if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) {
    throw new DomainError(
      'INVALID_ARGUMENT',
      `BETTER_COMPUTE_SECRET must be at least ${MIN_SECRET_LENGTH} characters to seal the PKI bundle`,
      { field: 'BETTER_COMPUTE_SECRET' },
    );
  }
  const header = Buffer.concat([MAGIC, randomBytes(SALT_BYTES), randomBytes(IV_BYTES)]);
  const key = deriveKey(secret, header);
  try {
    const cipher = createCipheriv('aes-256-gcm', key, header.subarray(MAGIC.length + SALT_BYTES), { authTagLength: TAG_BYTES });
    cipher.setAAD(header);
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(bundle), 'utf8'), cipher.final()]);
    return Buffer.concat([header, cipher.getAuthTag(), ciphertext]);
  } finally {
    key.fill(0);
  }
}

/**
 * Decrypts a sealed bundle and checks its shape.
 *
 * @throws DomainError `INVALID_ARGUMENT` (field `BETTER_COMPUTE_SECRET`) when the secret does not open it;
 *   `INVALID_CONFIG` when the bytes are not a sealed bundle of a known version.
 */
export function openPkiBundle(sealed: Uint8Array, secret: string): PkiBundle {
  const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  if (bytes.length <= HEADER_BYTES + TAG_BYTES || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new DomainError('INVALID_CONFIG', 'The sealed PKI bundle is malformed or of an unknown format version');
  }
  const header = bytes.subarray(0, HEADER_BYTES);
  const tag = bytes.subarray(HEADER_BYTES, HEADER_BYTES + TAG_BYTES);
  const key = deriveKey(typeof secret === 'string' ? secret : '', header);
  let plaintext: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, header.subarray(MAGIC.length + SALT_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(header);
    decipher.setAuthTag(tag);
    plaintext = Buffer.concat([decipher.update(bytes.subarray(HEADER_BYTES + TAG_BYTES)), decipher.final()]);
  } catch {
    throw new DomainError('INVALID_ARGUMENT', 'BETTER_COMPUTE_SECRET does not open the PKI bundle (wrong secret?)', {
      field: 'BETTER_COMPUTE_SECRET',
    });
  } finally {
    key.fill(0);
  }
  let json: unknown;
  try {
    json = JSON.parse(plaintext.toString('utf8'));
  } catch {
    throw new DomainError('INVALID_CONFIG', 'The sealed PKI bundle does not hold JSON');
  } finally {
    plaintext.fill(0);
  }
  return parsePkiBundle(json);
}

function deriveKey(secret: string, header: Buffer): Buffer {
  const salt = header.subarray(MAGIC.length, MAGIC.length + SALT_BYTES);
  return scryptSync(Buffer.from(secret, 'utf8'), salt, 32, SCRYPT);
}

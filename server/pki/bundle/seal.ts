import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';
import { DomainError } from '../../../protocol/errors';
import type { PkiBundle } from './bundle';
import { parsePkiBundle } from './bundle-schema';
import { MIN_SECRET_LENGTH, secretWeakness } from './secret-strength';

export { MIN_SECRET_LENGTH };

/**
 * Sealed bundle layouts. The key is scrypt(secret, salt); AES-256-GCM encrypts the bundle's UTF-8 JSON, with the
 * whole header (magic, KDF parameters, salt, iv) as additional data, so the header cannot be altered without
 * failing authentication.
 *
 * - Version 2 (written): `"BCPKI2" (6) | log2 N (1) | r (1) | p (1) | salt (16) | iv (12) | tag (16) | ciphertext`.
 *   The parameters travel in the header, so raising them later needs no new magic.
 * - Version 1 (read only): `"BCPKI1" (6) | salt (16) | iv (12) | tag (16) | ciphertext`, with N=2^15, r=8, p=1.
 *   It is opened and then re-sealed as version 2 on the next start (see `upgradeStoredPki`).
 */
const MAGIC_V1 = Buffer.from('BCPKI1', 'latin1');
const MAGIC_V2 = Buffer.from('BCPKI2', 'latin1');
const SALT_BYTES = 16;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** scrypt's cost parameters: N = 2^logN, block size r, parallelism p. */
interface ScryptParameters {
  logN: number;
  r: number;
  p: number;
}

/**
 * What new seals use: N=2^17, r=8, p=1, OWASP's minimum for scrypt. Each guess of the secret costs 128 MiB and
 * a fraction of a second; opening happens once per process start.
 */
export const SEAL_SCRYPT: Readonly<ScryptParameters> = { logN: 17, r: 8, p: 1 };
const V1_SCRYPT: Readonly<ScryptParameters> = { logN: 15, r: 8, p: 1 };
// Bounds on what a stored header may ask for, so a corrupted one cannot make the start allocate gigabytes.
const MAX_LOG_N = 22;
const MAX_SCRYPT_MEMORY = 1024 * 1024 * 1024;

interface Layout {
  params: ScryptParameters;
  header: Buffer;
  salt: Buffer;
  iv: Buffer;
  tag: Buffer;
  ciphertext: Buffer;
}

/**
 * Encrypts `bundle` under `secret` (normally `BETTER_COMPUTE_SECRET`) as a version 2 sealed bundle.
 *
 * @throws DomainError `INVALID_ARGUMENT` (field `BETTER_COMPUTE_SECRET`) when the secret is too weak (see
 *   `secretWeakness`: at least {@link MIN_SECRET_LENGTH} characters of random text).
 */
export function sealPkiBundle(bundle: PkiBundle, secret: string, params: ScryptParameters = SEAL_SCRYPT): Buffer {
  const weakness = secretWeakness(secret);
  if (weakness) {
    throw new DomainError('INVALID_ARGUMENT', `BETTER_COMPUTE_SECRET ${weakness}`, { field: 'BETTER_COMPUTE_SECRET' });
  }
  checkParameters(params);
  const salt = randomBytes(SALT_BYTES);
  const iv = randomBytes(IV_BYTES);
  const header = Buffer.concat([MAGIC_V2, Buffer.from([params.logN, params.r, params.p]), salt, iv]);
  const key = deriveKey(secret, salt, params);
  try {
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(header);
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(bundle), 'utf8'), cipher.final()]);
    return Buffer.concat([header, cipher.getAuthTag(), ciphertext]);
  } finally {
    key.fill(0);
  }
}

/** The KDF parameters a sealed bundle was made with, or null when the bytes are not a sealed bundle. */
export function sealParameters(sealed: Uint8Array): ScryptParameters | null {
  try {
    return readLayout(Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength)).params;
  } catch {
    return null;
  }
}

/** Whether a sealed bundle was made in the current layout with the current parameters (nothing to re-seal). */
export function isCurrentSeal(sealed: Uint8Array): boolean {
  const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  const params = sealParameters(bytes);
  return (
    params !== null &&
    bytes.subarray(0, MAGIC_V2.length).equals(MAGIC_V2) &&
    params.logN >= SEAL_SCRYPT.logN &&
    params.r >= SEAL_SCRYPT.r &&
    params.p >= SEAL_SCRYPT.p
  );
}

/**
 * Decrypts a sealed bundle (version 2, or version 1 as older releases wrote it) and checks its shape.
 *
 * @throws DomainError `INVALID_ARGUMENT` (field `BETTER_COMPUTE_SECRET`) when the secret does not open it;
 *   `INVALID_CONFIG` when the bytes are not a sealed bundle of a known version.
 */
export function openPkiBundle(sealed: Uint8Array, secret: string): PkiBundle {
  const layout = readLayout(Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength));
  const key = deriveKey(typeof secret === 'string' ? secret : '', layout.salt, layout.params);
  let plaintext: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, layout.iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(layout.header);
    decipher.setAuthTag(layout.tag);
    plaintext = Buffer.concat([decipher.update(layout.ciphertext), decipher.final()]);
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

function malformed(): DomainError {
  return new DomainError('INVALID_CONFIG', 'The sealed PKI bundle is malformed or of an unknown format version');
}

function readLayout(bytes: Buffer): Layout {
  const magic = bytes.subarray(0, MAGIC_V2.length);
  let params: ScryptParameters;
  let offset: number;
  if (magic.equals(MAGIC_V2)) {
    if (bytes.length < MAGIC_V2.length + 3) throw malformed();
    params = { logN: bytes[6]!, r: bytes[7]!, p: bytes[8]! };
    offset = MAGIC_V2.length + 3;
    try {
      checkParameters(params);
    } catch {
      throw malformed();
    }
  } else if (magic.equals(MAGIC_V1)) {
    params = { ...V1_SCRYPT };
    offset = MAGIC_V1.length;
  } else {
    throw malformed();
  }
  const headerBytes = offset + SALT_BYTES + IV_BYTES;
  if (bytes.length <= headerBytes + TAG_BYTES) throw malformed();
  return {
    params,
    header: bytes.subarray(0, headerBytes),
    salt: bytes.subarray(offset, offset + SALT_BYTES),
    iv: bytes.subarray(offset + SALT_BYTES, headerBytes),
    tag: bytes.subarray(headerBytes, headerBytes + TAG_BYTES),
    ciphertext: bytes.subarray(headerBytes + TAG_BYTES),
  };
}

function checkParameters({ logN, r, p }: ScryptParameters) {
  const ok =
    Number.isInteger(logN) &&
    Number.isInteger(r) &&
    Number.isInteger(p) &&
    logN >= V1_SCRYPT.logN &&
    logN <= MAX_LOG_N &&
    r >= 1 &&
    r <= 32 &&
    p >= 1 &&
    p <= 16 &&
    scryptMemory({ logN, r, p }) <= MAX_SCRYPT_MEMORY;
  if (!ok) throw new DomainError('INVALID_CONFIG', 'scrypt parameters out of bounds');
}

const scryptMemory = ({ logN, r }: ScryptParameters) => 128 * r * 2 ** logN;

function deriveKey(secret: string, salt: Buffer, params: ScryptParameters): Buffer {
  // maxmem above scrypt's own need (128 * r * N), which node:crypto's 32 MiB default refuses from N=2^15 on.
  return scryptSync(Buffer.from(secret, 'utf8'), salt, 32, {
    N: 2 ** params.logN,
    r: params.r,
    p: params.p,
    maxmem: scryptMemory(params) * 2,
  });
}

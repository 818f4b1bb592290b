import { createDecipheriv, createECDH, type ECDH, type KeyObject } from 'node:crypto';
import { DomainError } from '../../../protocol/errors';
import { decodeBase64url } from '../../../protocol/base64url';
import { ALG, KEY_WRAP_IV, concatKdf } from '../../../protocol/concat-kdf';
import { JoinRefusal } from './refusal';
import { p256PrivateScalar } from '../../pki/ca/p256-private';

/** The largest sealed token JoinService reads; a sealed bearer token is about 600 characters. */
export const MAX_SEAL_LENGTH = 8192;

/** How far a seal's `iat` may be from the database's clock, either way: ten minutes. */
export const SEAL_IAT_TOLERANCE_SECONDS = 600;

/**
 * Whether a seal made at `iat` (Unix seconds) is fresh at `now` (the database's clock): within
 * {@link SEAL_IAT_TOLERANCE_SECONDS} either way, so a sealed token captured on the way cannot be replayed later
 * with its CSR, and an agent with a modestly wrong clock still joins.
 */
export function isFreshSeal(iat: number, now: Date): boolean {
  return Math.abs(iat * 1000 - now.getTime()) <= SEAL_IAT_TOLERANCE_SECONDS * 1000;
}

const MAX_PARTY_INFO_BYTES = 256;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** What opening a seal needs: the JoinService encryption key and the hash of the CSR sent with the seal. */
interface OpenSealOptions {
  /** The P-256 private key of `join.encryptionJwk`. */
  readonly encryptionKey: KeyObject;
  /**
   * Every key a seal may be made to while a join-encryption rotation is prepared or active, the one in use
   * first (JoinCrypto.encryptionKeys); `[encryptionKey]` when absent. A seal opens under whichever it was made to.
   */
  readonly encryptionKeys?: readonly KeyObject[];
  /** Lowercase hex SHA-256 of the request's CSR DER (`parseCsr(...).csrSha256`). */
  readonly csrSha256: string;
}

const refuse = (detail: string, cause?: unknown) => new JoinRefusal('join:token', detail, { cause });

function field(text: string, what: string): Buffer {
  const bytes = decodeBase64url(text);
  if (!bytes) throw refuse(`${what} is not base64url`);
  return bytes;
}

/**
 * Opens a sealed join token: a compact JWE (RFC 7516) with `alg: ECDH-ES+A256KW`, `enc: A256GCM`, and a
 * protected header carrying `typ: "bcjt+jwe"`, an integer `iat` and `csr`, which must equal `csrSha256`
 * so a relay cannot pair the seal with a CSR of its own. No other algorithm, no `zip`, no `crit`, and no
 * `epk` off the P-256 curve is accepted. The JWE is parsed and decrypted here, synchronously, with
 * node:crypto only: ECDH, the Concat KDF of RFC 7518 §4.6, AES key unwrap (RFC 3394) and AES-256-GCM
 * with the protected header's base64url text as additional data. `iat` is checked for form only here; the
 * admission checks it against the database's clock (see `isFreshSeal`). Returns the bearer token (UTF-8 plaintext).
 *
 * @throws JoinRefusal with reason `join:token` on any failure; DomainError `INVALID_CONFIG` when
 *   `encryptionKey` is not a P-256 private key.
 */
export function openSeal(compactJwe: string, options: OpenSealOptions): string {
  return openSealedToken(compactJwe, options).token;
}

/** An opened seal: the bearer token and the header's `iat`, which the admission checks against the database clock. */
interface OpenedSeal {
  token: string;
  /** The protected header's `iat`, Unix seconds. */
  iat: number;
}

/** {@link openSeal}, returning the header's `iat` with the token. Same checks, same errors. */
export function openSealedToken(compactJwe: string, options: OpenSealOptions): OpenedSeal {
  const { encryptionKey, csrSha256 } = options;
  const agreements = (options.encryptionKeys?.length ? options.encryptionKeys : [encryptionKey]).map(keyAgreement);
  if (typeof compactJwe !== 'string' || compactJwe.length > MAX_SEAL_LENGTH) throw refuse('seal size out of bounds');
  const parts = compactJwe.split('.');
  if (parts.length !== 5) throw refuse('not a compact JWE');
  // Exactly five parts: checked just above.
  const [protectedText, encryptedKeyText, ivText, ciphertextText, tagText] = parts as [string, string, string, string, string];

  let header: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(utf8.decode(field(protectedText, 'protected header')));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw refuse('header is not an object');
    header = parsed as Record<string, unknown>;
  } catch (error) {
    throw error instanceof JoinRefusal ? error : refuse('header is not JSON', error);
  }
  if (header.alg !== ALG) throw refuse('alg is not ECDH-ES+A256KW');
  if (header.enc !== 'A256GCM') throw refuse('enc is not A256GCM');
  if (header.typ !== 'bcjt+jwe') throw refuse('typ is not bcjt+jwe');
  if ('zip' in header) throw refuse('zip is not allowed');
  if ('crit' in header) throw refuse('crit is not allowed');
  if (typeof header.iat !== 'number' || !Number.isSafeInteger(header.iat) || header.iat < 0) throw refuse('iat is not an integer');
  // Not secret (the CSR travels in the same request), so a plain comparison is fine.
  if (typeof header.csr !== 'string' || header.csr !== csrSha256) throw refuse('csr is not the hash of this request CSR');

  const senderPoint = readEphemeralPoint(header.epk);
  const apu = partyInfo(header.apu, 'apu');
  const apv = partyInfo(header.apv, 'apv');
  const encryptedKey = field(encryptedKeyText, 'encrypted key');
  const iv = field(ivText, 'iv');
  const ciphertext = field(ciphertextText, 'ciphertext');
  const tag = field(tagText, 'tag');
  if (encryptedKey.length !== 40) throw refuse('encrypted key is not a wrapped 256-bit key');
  if (iv.length !== 12) throw refuse('iv is not 96 bits');
  if (tag.length !== 16) throw refuse('tag is not 128 bits');
  if (ciphertext.length === 0) throw refuse('empty ciphertext');

  // The key the seal was made to is the one whose key unwrap passes its integrity check (RFC 3394): tried in
  // order, the key in use first, so outside a rotation this is one ECDH as before.
  let cek: Buffer | null = null;
  let failure: unknown;
  for (const agreement of agreements) {
    let sharedSecret: Buffer;
    try {
      // OpenSSL refuses a point that is not on the curve (P-256 has cofactor 1, so that is the whole check).
      sharedSecret = agreement.computeSecret(senderPoint);
    } catch (error) {
      throw refuse('epk is not a point on P-256', error);
    }
    try {
      const unwrap = createDecipheriv('id-aes256-wrap', concatKdf(sharedSecret, apu, apv), KEY_WRAP_IV);
      cek = Buffer.concat([unwrap.update(encryptedKey), unwrap.final()]);
      break;
    } catch (error) {
      failure = error;
    }
  }
  if (!cek) throw refuse('decryption failed', failure);
  try {
    const gcm = createDecipheriv('aes-256-gcm', cek, iv, { authTagLength: 16 });
    gcm.setAAD(Buffer.from(protectedText, 'ascii'));
    gcm.setAuthTag(tag);
    const plaintext = Buffer.concat([gcm.update(ciphertext), gcm.final()]);
    const token = utf8.decode(plaintext);
    if (token.length === 0) throw refuse('empty token');
    return { token, iat: header.iat as number };
  } catch (error) {
    throw error instanceof JoinRefusal ? error : refuse('decryption failed', error);
  }
}

const agreementsByKey = new WeakMap<KeyObject, ECDH>();

/**
 * A node:crypto ECDH for the encryption key, made once per key: ECDH.computeSecret takes the raw sender
 * point, which spares the JWK import of every `epk` (about 90 µs a join).
 */
function keyAgreement(encryptionKey: KeyObject): ECDH {
  let agreement = agreementsByKey.get(encryptionKey);
  if (agreement) return agreement;
  if (encryptionKey?.type !== 'private' || encryptionKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new DomainError('INVALID_CONFIG', 'The join encryption key is not a P-256 private key');
  }
  const scalar = p256PrivateScalar(encryptionKey);
  agreement = createECDH('prime256v1');
  agreement.setPrivateKey(scalar);
  scalar.fill(0);
  agreementsByKey.set(encryptionKey, agreement);
  return agreement;
}

/** The `epk` of the header as an uncompressed point (`04 || x || y`), once its JWK form checks out. */
function readEphemeralPoint(epk: unknown): Buffer {
  if (typeof epk !== 'object' || epk === null || Array.isArray(epk)) throw refuse('epk is missing');
  const { kty, crv, x, y, d } = epk as Record<string, unknown>;
  if (kty !== 'EC' || crv !== 'P-256') throw refuse('epk is not a P-256 EC key');
  if (d !== undefined) throw refuse('epk carries a private key');
  if (typeof x !== 'string' || typeof y !== 'string') throw refuse('epk coordinates are missing');
  const xBytes = field(x, 'epk.x');
  const yBytes = field(y, 'epk.y');
  if (xBytes.length !== 32 || yBytes.length !== 32) throw refuse('epk coordinates are not 32 bytes');
  return Buffer.concat([Buffer.from([0x04]), xBytes, yBytes]);
}

function partyInfo(value: unknown, what: string): Buffer {
  if (value === undefined) return Buffer.alloc(0);
  if (typeof value !== 'string') throw refuse(`${what} is not a string`);
  const bytes = field(value, what);
  if (bytes.length > MAX_PARTY_INFO_BYTES) throw refuse(`${what} is too long`);
  return bytes;
}

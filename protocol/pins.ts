import { createHash, createPublicKey, KeyObject, X509Certificate, type webcrypto } from 'node:crypto';
import { DomainError } from './errors';

/** What {@link spkiPin} accepts: DER SubjectPublicKeyInfo bytes, a node:crypto key, a WebCrypto key, or PEM. */
type PinnableKey = Uint8Array | KeyObject | webcrypto.CryptoKey | string;

/**
 * The HPKP-form pin of a public key: `sha256/` + standard base64 (with padding) of the SHA-256 of its DER
 * SubjectPublicKeyInfo, as `protocol.md` defines a pin. Equivalent to
 * `openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`.
 *
 * A private key (KeyObject, CryptoKey or PEM) pins its public half. A PEM certificate pins the key it certifies.
 * DER bytes are hashed exactly as given, after checking that they parse as a SubjectPublicKeyInfo, so a
 * certificate's DER passed by mistake fails instead of producing a pin nothing will ever match.
 *
 * @throws DomainError `INVALID_ARGUMENT` (field `key`) when the input is not a public key.
 */
export function spkiPin(key: PinnableKey): string {
  return `sha256/${createHash('sha256').update(spkiDer(key)).digest('base64')}`;
}

/** The DER SubjectPublicKeyInfo of `key` (see {@link spkiPin} for what is accepted). */
export function spkiDer(key: PinnableKey): Buffer {
  if (key instanceof KeyObject) return publicSpki(key);
  if (typeof key === 'string') return spkiFromPem(key);
  if (key instanceof Uint8Array) {
    const der = Buffer.from(key.buffer, key.byteOffset, key.byteLength);
    try {
      createPublicKey({ key: der, format: 'der', type: 'spki' });
    } catch {
      throw invalidKey('DER bytes are not a SubjectPublicKeyInfo');
    }
    return der;
  }
  if (isCryptoKey(key)) return publicSpki(KeyObject.from(key));
  throw invalidKey('expected SPKI DER bytes, a KeyObject, a CryptoKey or PEM');
}

function publicSpki(key: KeyObject): Buffer {
  if (key.type === 'secret') throw invalidKey('a secret key has no public key to pin');
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  return publicKey.export({ type: 'spki', format: 'der' });
}

function spkiFromPem(pem: string): Buffer {
  try {
    if (pem.includes('-----BEGIN CERTIFICATE-----')) return publicSpki(new X509Certificate(pem).publicKey);
    return publicSpki(createPublicKey(pem));
  } catch {
    throw invalidKey('PEM is not a public key, private key or certificate');
  }
}

function isCryptoKey(value: unknown): value is webcrypto.CryptoKey {
  return typeof globalThis.CryptoKey === 'function' && value instanceof globalThis.CryptoKey;
}

function invalidKey(problem: string): DomainError {
  return new DomainError('INVALID_ARGUMENT', `key: ${problem}`, { field: 'key' });
}

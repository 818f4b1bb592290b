import { createHash, createPublicKey, type KeyObject } from 'node:crypto';

/**
 * The pin of a public key: `sha256/` + standard base64 (with padding) of the SHA-256 of its DER
 * SubjectPublicKeyInfo, the HPKP form used by `join_signing_key_pin`, `join_encryption_key_pin` and
 * `serving_ca_spki_pin`.
 */
export function spkiPin(key: KeyObject | Uint8Array): string {
  const der =
    key instanceof Uint8Array
      ? key
      : (key.type === 'public' ? key : createPublicKey(key)).export({ type: 'spki', format: 'der' });
  return `sha256/${createHash('sha256').update(der).digest('base64')}`;
}

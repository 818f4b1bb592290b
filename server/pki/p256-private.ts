import type { KeyObject } from 'node:crypto';
import { contentOf, expectElement, readRoot } from '../../protocol/der/reader';
import { TAG } from '../../protocol/der/tags';

/**
 * The 32-byte private scalar of a P-256 private key, read from its PKCS#8 DER (RFC 5208 wrapping an
 * RFC 5915 ECPrivateKey). Not through a JWK export: on Node 20 that can deadlock for a key made by
 * generateKeyPair(Sync) when a garbage collection lands inside the export. The caller zeroes the result.
 */
export function p256PrivateScalar(key: KeyObject): Buffer {
  const der = key.export({ type: 'pkcs8', format: 'der' });
  try {
    const info = readRoot(der);
    const version = expectElement(der, info.contentStart, info.end, TAG.integer, 'PKCS#8 version');
    const algorithm = expectElement(der, version.end, info.end, TAG.sequence, 'PKCS#8 algorithm');
    const wrapped = expectElement(der, algorithm.end, info.end, TAG.octetString, 'PKCS#8 privateKey');
    const ecKey = contentOf(der, wrapped);
    const ecSequence = readRoot(ecKey);
    const ecVersion = expectElement(ecKey, ecSequence.contentStart, ecSequence.end, TAG.integer, 'ECPrivateKey version');
    const scalar = expectElement(ecKey, ecVersion.end, ecSequence.end, TAG.octetString, 'ECPrivateKey privateKey');
    const bytes = contentOf(ecKey, scalar);
    if (bytes.length !== 32) throw new Error('the private key is not 32 bytes');
    return Buffer.from(bytes);
  } finally {
    der.fill(0);
  }
}

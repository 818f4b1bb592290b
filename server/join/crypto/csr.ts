import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { DerError, checkDerTree, contentOf, encodingOf, expectElement, readElement } from '../../../protocol/der/reader';
import { TAG } from '../../../protocol/der/tags';
import { P256_SPKI_PREFIX } from '../../../protocol/p256';
import { JoinRefusal } from './refusal';

/** The largest CSR JoinService reads; a P-256 request with a modest subject is about 250 bytes. */
export const MAX_CSR_BYTES = 4096;

/** A PKCS#10 request whose structure and self-signature verified. */
export interface ParsedCsr {
  /** The DER SubjectPublicKeyInfo of the requested key, exactly as in the CSR (uncompressed P-256). */
  readonly spkiDer: Buffer;
  /** Lowercase hex SHA-256 of the whole CSR DER: the `csr` a seal must carry. */
  readonly csrSha256: string;
}

const P256_SPKI_LENGTH = P256_SPKI_PREFIX.length + 65;
// SEQUENCE { ecdsa-with-SHA256 } with absent parameters (RFC 5758 §3.2).
const ECDSA_SHA256_ALGORITHM = Buffer.from('300a06082a8648ce3d040302', 'hex');
// INTEGER 0: PKCS#10 v1, the only version.
const VERSION_1 = Buffer.from('020100', 'hex');

/**
 * Parses and verifies a DER PKCS#10 request. Strict on purpose: the key must be an uncompressed EC P-256
 * point (the form Go's crypto/x509 can read back from the issued certificate), the signature
 * ecdsa-with-SHA256 without parameters, the encoding DER throughout (every nested element, to a
 * depth limit) with nothing after it, and the self-signature must
 * verify over certificationRequestInfo. The subject and attributes are ignored: names come only from
 * JoinService.
 *
 * @throws JoinRefusal with reason `join:csr` on any deviation.
 */
export function parseCsr(der: Buffer): ParsedCsr {
  if (!Buffer.isBuffer(der) || der.length === 0 || der.length > MAX_CSR_BYTES) {
    throw new JoinRefusal('join:csr', 'CSR size out of bounds');
  }
  let spkiDer: Buffer;
  let info: Buffer;
  let signature: Buffer;
  try {
    const outer = expectElement(der, 0, der.length, TAG.sequence, 'CertificationRequest');
    if (outer.end !== der.length) throw new DerError('trailing bytes after the CSR');
    // DER all the way down, not only the fields read below: the subject and attributes are ignored, but a
    // BER encoding inside them (an indefinite-length SET) is still not DER and is refused.
    checkDerTree(der, outer);

    const cri = expectElement(der, outer.contentStart, outer.end, TAG.sequence, 'certificationRequestInfo');
    const version = readElement(der, cri.contentStart, cri.end);
    if (!encodingOf(der, version).equals(VERSION_1)) throw new DerError('version is not 0');
    const subject = expectElement(der, version.end, cri.end, TAG.sequence, 'subject');
    const spki = expectElement(der, subject.end, cri.end, TAG.sequence, 'subjectPKInfo');
    // A copy, so the result does not alias a request buffer the caller may reuse.
    spkiDer = Buffer.from(encodingOf(der, spki));
    const prefix = spkiDer.subarray(0, P256_SPKI_PREFIX.length);
    if (spkiDer.length !== P256_SPKI_LENGTH || !prefix.equals(P256_SPKI_PREFIX) || spkiDer[P256_SPKI_PREFIX.length] !== 0x04) {
      throw new DerError('key is not an uncompressed EC P-256 key');
    }
    const attributes = expectElement(der, spki.end, cri.end, 0xa0, 'attributes');
    if (attributes.end !== cri.end) throw new DerError('trailing bytes in certificationRequestInfo');

    const algorithm = readElement(der, cri.end, outer.end);
    if (!encodingOf(der, algorithm).equals(ECDSA_SHA256_ALGORITHM)) {
      throw new DerError('signature algorithm is not ecdsa-with-SHA256');
    }
    const bits = expectElement(der, algorithm.end, outer.end, TAG.bitString, 'signature');
    if (bits.end !== outer.end) throw new DerError('trailing bytes in CertificationRequest');
    const content = contentOf(der, bits);
    if (content.length < 9 || content.length > 74 || content[0] !== 0) throw new DerError('malformed signature');
    signature = content.subarray(1);
    info = encodingOf(der, cri);
  } catch (error) {
    throw new JoinRefusal('join:csr', error instanceof DerError ? error.message : 'malformed CSR', { cause: error });
  }

  let publicKey: KeyObject;
  try {
    // Imported as a JWK from the point: about 40 µs less than the SPKI DER decoder of OpenSSL 3, and OpenSSL
    // still refuses a point that is not on the curve.
    const point = spkiDer.subarray(P256_SPKI_PREFIX.length);
    const x = point.toString('base64url', 1, 33);
    const y = point.toString('base64url', 33, 65);
    publicKey = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x, y }, format: 'jwk' });
  } catch (error) {
    throw new JoinRefusal('join:csr', 'invalid public key', { cause: error });
  }
  let valid = false;
  try {
    valid = verify('sha256', info, { key: publicKey, dsaEncoding: 'der' }, signature);
  } catch {
    valid = false;
  }
  if (!valid) throw new JoinRefusal('join:csr', 'self-signature does not verify');

  return { spkiDer, csrSha256: createHash('sha256').update(der).digest('hex') };
}

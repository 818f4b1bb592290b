import { X509Certificate } from 'node:crypto';
import { contentOf, expectElement, readChildren, readElement } from '../../protocol/der/reader';
import { TAG } from '../../protocol/der/tags';

const OID_KEY_USAGE = Buffer.from('551d0f', 'hex');
const OID_EXTENDED_KEY_USAGE = Buffer.from('551d25', 'hex');
const OID_BASIC_CONSTRAINTS = Buffer.from('551d13', 'hex');
const CLIENT_AUTH = Buffer.from('2b06010505070302', 'hex'); // 1.3.6.1.5.5.7.3.2

/** Every certificate of a PEM bundle (the node CA, or several while it rotates). */
export function certificatesOf(pem: string): X509Certificate[] {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g)].map((m) => new X509Certificate(m[0]));
}

/**
 * True when the certificate is a leaf that may sign a TLS client's handshake: basicConstraints without cA, keyUsage
 * with digitalSignature and extendedKeyUsage with clientAuth, both present. Read from the DER: X509Certificate's
 * `ca` is OpenSSL's X509_check_ca, false for a cA=true certificate without keyCertSign.
 */
function isTlsClientLeaf(der: Buffer): boolean {
  const certificate = expectElement(der, 0, der.length, TAG.sequence, 'Certificate');
  const tbs = expectElement(der, certificate.contentStart, certificate.end, TAG.sequence, 'tbsCertificate');
  const extensions = readChildren(der, tbs).find((field) => field.tag === 0xa3);
  if (!extensions) return false;
  const list = expectElement(der, extensions.contentStart, extensions.end, TAG.sequence, 'extensions');
  let digitalSignature = false;
  let clientAuth = false;
  for (const extension of readChildren(der, list)) {
    const parts = readChildren(der, extension);
    const oid = parts[0];
    const value = parts[parts.length - 1];
    if (oid?.tag !== TAG.oid || value?.tag !== TAG.octetString) return false;
    const inner = readElement(der, value.contentStart, value.end);
    if (inner.end !== value.end) return false;
    if (contentOf(der, oid).equals(OID_BASIC_CONSTRAINTS)) {
      if (inner.tag !== TAG.sequence) return false;
      const first = readChildren(der, inner)[0];
      if (first?.tag === TAG.boolean && contentOf(der, first)[0] !== 0) return false;
    } else if (contentOf(der, oid).equals(OID_KEY_USAGE)) {
      if (inner.tag !== TAG.bitString || inner.end - inner.contentStart < 2) return false;
      digitalSignature = (der[inner.contentStart + 1]! & 0x80) !== 0;
    } else if (contentOf(der, oid).equals(OID_EXTENDED_KEY_USAGE)) {
      if (inner.tag !== TAG.sequence) return false;
      clientAuth = readChildren(der, inner).some((purpose) => purpose.tag === TAG.oid && contentOf(der, purpose).equals(CLIENT_AUTH));
    }
  }
  return digitalSignature && clientAuth;
}

/**
 * Whether `peer` is a node certificate of one of `nodeCas`, judged on everything but its dates: the CA's
 * subject is its issuer (and the key identifiers match), the CA's key signed it, it is no CA itself, and it
 * may authenticate a TLS client (keyUsage digitalSignature, extendedKeyUsage clientAuth), as every certificate
 * JoinService issues does.
 *
 * The gateway asks this when the handshake was not authorized: OpenSSL reports only the last problem it met,
 * so an expired certificate that some other key signed reads as `CERT_HAS_EXPIRED` too. Only the dates are
 * ignored because an expired node certificate must still reach JoinService, whose refusal then names the
 * reason (`expired`) to the node's owner; anything else is believed only when it verifies here.
 */
export function isNodeCertificate(peer: X509Certificate, nodeCas: readonly X509Certificate[]): boolean {
  try {
    if (peer.ca || !isTlsClientLeaf(peer.raw)) return false;
    return nodeCas.some((ca) => ca.ca && peer.checkIssued(ca) && peer.verify(ca.publicKey));
  } catch {
    return false;
  }
}

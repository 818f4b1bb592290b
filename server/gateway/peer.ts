import { X509Certificate } from 'node:crypto';
import { contentOf, expectElement, readChildren, readElement } from '../der/reader';
import { TAG } from '../der/tags';

const OID_KEY_USAGE = Buffer.from('551d0f', 'hex');
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

/** Every certificate of a PEM bundle (the node CA, or several while it rotates). */
export function certificatesOf(pem: string): X509Certificate[] {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g)].map((m) => new X509Certificate(m[0]));
}

/** True when the leaf carries keyUsage with digitalSignature, the bit a TLS client signs its handshake under. */
function hasDigitalSignature(der: Buffer): boolean {
  const certificate = expectElement(der, 0, der.length, TAG.sequence, 'Certificate');
  const tbs = expectElement(der, certificate.contentStart, certificate.end, TAG.sequence, 'tbsCertificate');
  const extensions = readChildren(der, tbs).find((field) => field.tag === 0xa3);
  if (!extensions) return false;
  const list = expectElement(der, extensions.contentStart, extensions.end, TAG.sequence, 'extensions');
  for (const extension of readChildren(der, list)) {
    const parts = readChildren(der, extension);
    const oid = parts[0];
    const value = parts[parts.length - 1];
    if (oid?.tag !== TAG.oid || value?.tag !== TAG.octetString || !contentOf(der, oid).equals(OID_KEY_USAGE)) continue;
    const bits = readElement(der, value.contentStart, value.end);
    if (bits.tag !== TAG.bitString || bits.end !== value.end || bits.end - bits.contentStart < 2) return false;
    return (der[bits.contentStart + 1]! & 0x80) !== 0;
  }
  return false;
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
    if (peer.ca || !(peer.keyUsage ?? []).includes(CLIENT_AUTH) || !hasDigitalSignature(peer.raw)) return false;
    return nodeCas.some((ca) => ca.ca && peer.checkIssued(ca) && peer.verify(ca.publicKey));
  } catch {
    return false;
  }
}

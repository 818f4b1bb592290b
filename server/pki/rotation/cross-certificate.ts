import { createPrivateKey, X509Certificate } from 'node:crypto';
import { childAt, contentOf, encodingOf, readChildren, readRoot } from '../../../protocol/der/reader';
import type { PkiBundle, PkiCertifiedKey } from '../bundle/bundle';
import { caIdentity } from '../ca/issuing-ca';
import { authorityKeyIdentifier, buildCertificate, randomSerial, toPem } from '../ca/x509-build';

const AKI_OID = Buffer.from([0x55, 0x1d, 0x23]);

/** The extensions of a certificate's DER, each as its own encoding, without authorityKeyIdentifier. */
function extensionsWithoutAuthority(certDer: Buffer): Buffer[] {
  const tbs = childAt(readChildren(certDer, readRoot(certDer)), 0, 'tbsCertificate');
  const wrapper = readChildren(certDer, tbs).find((node) => node.tag === 0xa3);
  if (!wrapper) return [];
  const list = childAt(readChildren(certDer, wrapper), 0, 'extensions');
  return readChildren(certDer, list)
    .filter((ext) => {
      const [oid] = readChildren(certDer, ext);
      return !(oid && oid.tag === 0x06 && contentOf(certDer, oid).equals(AKI_OID));
    })
    .map((ext) => encodingOf(certDer, ext));
}

/**
 * The cross-certificate of a serving CA rotation: `next`'s subject, key and extensions (cA, its path length, its
 * keyUsage and subjectKeyIdentifier, copied as they are), issued and signed by `previous`, with `previous`'s key
 * identifier as authorityKeyIdentifier and a validity within both CAs'. A gateway sends it after its leaf, then
 * `previous`'s certificate, so an agent (or any TLS client) that trusts only `previous` follows the chain leaf →
 * `next` (certified by `previous`) → `previous`, and one that trusts `next` stops at the certificate after the leaf.
 * The server's CAs share their subject name, so the certificate is self-issued and counts for no path length.
 */
export function crossCertify(next: { certificatePem: string }, previous: PkiCertifiedKey, serial = randomSerial()): string {
  const nextCert = new X509Certificate(next.certificatePem);
  const previousCert = new X509Certificate(previous.certificatePem);
  const nextIdentity = caIdentity(nextCert.raw);
  const previousIdentity = caIdentity(previousCert.raw);
  const notBefore = Math.max(Date.parse(nextCert.validFrom), Date.parse(previousCert.validFrom));
  const notAfter = Math.min(Date.parse(nextCert.validTo), Date.parse(previousCert.validTo));
  const der = buildCertificate({
    serial,
    issuer: previousIdentity.subject,
    subject: nextIdentity.subject,
    notBefore: new Date(notBefore),
    notAfter: new Date(notAfter),
    spkiDer: nextIdentity.spkiDer,
    extensions: [...extensionsWithoutAuthority(nextCert.raw), authorityKeyIdentifier(previousIdentity.keyId)],
    signingKey: createPrivateKey(previous.privateKeyPem),
  });
  return toPem(der);
}

/** True when `crossPem` certifies `servingCaPem`'s key and verifies under `previousPem`'s. */
function crossCertifies(crossPem: string, servingCaPem: string, previousPem: string): boolean {
  try {
    const cross = new X509Certificate(crossPem);
    const servingCa = new X509Certificate(servingCaPem);
    const previous = new X509Certificate(previousPem);
    return cross.ca && cross.publicKey.equals(servingCa.publicKey) && cross.checkIssued(previous) && cross.verify(previous.publicKey);
  } catch {
    return false;
  }
}

/**
 * What a gateway sends after its leaf (PEM, in order): the serving CA in use; while a serving CA rotation is
 * active, the serving CA in use certified by the previous one (the cross-certificate made at `--activate`) and
 * then the previous one, so an agent still pinning the previous CA accepts the chain until `--retire`.
 */
export function servingCaChainOf(bundle: Pick<PkiBundle, 'servingCa'> & Partial<Pick<PkiBundle, 'rotations'>>): string[] {
  const previous = bundle.rotations?.['serving-ca'];
  const cross = previous?.phase === 'active' ? previous.crossCertificatePem : undefined;
  if (previous?.certificatePem && cross && crossCertifies(cross, bundle.servingCa.certificatePem, previous.certificatePem))
    return [cross, previous.certificatePem];
  return [bundle.servingCa.certificatePem];
}

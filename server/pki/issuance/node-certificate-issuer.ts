import { createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { DomainError } from '../../../protocol/errors';
import { caIdentity, isP256PrivateKey } from '../ca/issuing-ca';
import { authorityKeyIdentifier, basicConstraints, extendedKeyUsage, KEY_USAGE, keyUsage, OIDS } from '../ca/x509-build';

/**
 * The node CA as `issueNodeCertificate` takes it. Build it once (`pkiJoinCrypto` does) and pass the same object
 * every time: what is derived from it is cached per key.
 */
export interface NodeCertificateIssuer {
  /** The node CA's P-256 private key. */
  key: KeyObject;
  /** The node CA's certificate, DER. */
  certDer: Buffer;
  /** The exact DER of the CA's subject Name (optional; read from `certDer` when absent, and checked once). */
  subjectDer?: Buffer;
}

/** What every node certificate from one CA shares, encoded once. */
interface PreparedIssuer {
  certDer: Buffer;
  issuerName: Buffer;
  /** basicConstraints cA=false, keyUsage digitalSignature (both critical), EKU serverAuth and clientAuth, authorityKeyIdentifier. */
  constantExtensions: Buffer;
  /** The CA certificate's notAfter: no certificate it issues may outlive it. */
  notAfter: Date;
}

const prepared = new WeakMap<KeyObject, PreparedIssuer>();

/**
 * The cached {@link PreparedIssuer} for `ca`, computed on first use: the key must be a P-256 private key that
 * matches the certificate, so a misconfigured CA fails on the first certificate rather than producing
 * certificates that never verify.
 *
 * @throws DomainError `INVALID_CONFIG` when the CA is unusable.
 */
export function prepareIssuer(ca: NodeCertificateIssuer): PreparedIssuer {
  const cached = prepared.get(ca.key);
  if (cached && (cached.certDer === ca.certDer || cached.certDer.equals(ca.certDer))) {
    if (!ca.subjectDer || ca.subjectDer === cached.issuerName || ca.subjectDer.equals(cached.issuerName)) return cached;
  }
  const fresh = prepareUncached(ca);
  prepared.set(ca.key, fresh);
  return fresh;
}

function prepareUncached(ca: NodeCertificateIssuer): PreparedIssuer {
  if (!ca || !ca.key || !isP256PrivateKey(ca.key)) {
    throw new DomainError('INVALID_CONFIG', 'The node CA key is not an EC P-256 private key');
  }
  let identity: ReturnType<typeof caIdentity>;
  try {
    identity = caIdentity(ca.certDer);
  } catch {
    throw new DomainError('INVALID_CONFIG', 'The node CA certificate does not parse');
  }
  const publicSpki = createPublicKey(ca.key).export({ type: 'spki', format: 'der' });
  if (!publicSpki.equals(identity.spkiDer)) {
    throw new DomainError('INVALID_CONFIG', 'The node CA key does not match the node CA certificate');
  }
  if (ca.subjectDer && !ca.subjectDer.equals(identity.subject)) {
    throw new DomainError('INVALID_CONFIG', "subjectDer is not the node CA certificate's subject");
  }
  let notAfter: Date;
  try {
    notAfter = new Date(Date.parse(new X509Certificate(ca.certDer).validTo));
  } catch {
    throw new DomainError('INVALID_CONFIG', 'The node CA certificate does not parse');
  }
  if (Number.isNaN(notAfter.getTime())) throw new DomainError('INVALID_CONFIG', 'The node CA certificate has no readable notAfter');
  return {
    certDer: ca.certDer,
    notAfter,
    issuerName: identity.subject,
    constantExtensions: Buffer.concat([
      basicConstraints(false),
      keyUsage([KEY_USAGE.digitalSignature]),
      // Both, as the SPIFFE X509-SVID profile requires of a leaf that carries the extension: a node is a TLS
      // client of the gateway and may serve TLS to its peers.
      extendedKeyUsage([OIDS.serverAuth, OIDS.clientAuth]),
      authorityKeyIdentifier(identity.keyId),
    ]),
  };
}

import { createPrivateKey, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import type { PkiBundle } from './bundle';
import { selfSignedCertificate } from '../ca/ca';
import { basicConstraints, encodeName, keyIdentifier, KEY_USAGE, keyUsage, OIDS, subjectKeyIdentifier, toPem } from '../ca/x509-build';

const SUBJECT = encodeName([[OIDS.commonName, 'Better Compute JoinService signing key']]);

/**
 * The JoinService signing key's certificate: self-signed, cA=false, keyUsage digitalSignature only. Agents
 * trust the key by its pin (`join_signing_key_pin`), never by a chain, so the certificate only carries the key.
 * Self-signed rather than issued by the node CA, so it can never verify as a node's TLS client certificate at
 * the gateway (which trusts the node CA): the signing key signs answers, it is not a node.
 */
export function selfSignedSigningCertificate(privateKey: KeyObject, notBefore: Date, notAfter: Date): Buffer {
  const spkiDer = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  return selfSignedCertificate(privateKey, spkiDer, SUBJECT, { notBefore, notAfter }, [
    basicConstraints(false),
    keyUsage([KEY_USAGE.digitalSignature]),
    subjectKeyIdentifier(keyIdentifier(spkiDer)),
  ]);
}

/**
 * Whether a certificate is self-issued (issuer = subject) and signed by its own key. Not `checkIssued(cert)`:
 * OpenSSL's issuer check also wants keyCertSign on the issuer, which a leaf rightly lacks.
 */
export function isSelfSigned(cert: X509Certificate): boolean {
  return cert.issuer === cert.subject && cert.verify(cert.publicKey);
}

/**
 * The rotation path for installs made before the signing certificate was self-signed: a bundle whose signing
 * certificate the node CA issued gets a self-signed certificate for the SAME key, with the same validity, so
 * `join_signing_key_pin` (the pin of the key) and every install that embeds it keep working. Returns null when
 * the certificate is already self-signed.
 */
export function rotateSigningCertificate(bundle: PkiBundle): PkiBundle | null {
  const current = new X509Certificate(bundle.signingKey.certificatePem);
  if (isSelfSigned(current)) return null;
  const key = createPrivateKey(bundle.signingKey.privateKeyPem);
  const der = selfSignedSigningCertificate(key, new Date(Date.parse(current.validFrom)), new Date(Date.parse(current.validTo)));
  return { ...bundle, signingKey: { ...bundle.signingKey, certificatePem: toPem(der) } };
}

import { createPrivateKey, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { DomainError } from '../../../protocol/errors';
import { spkiPin } from '../../../protocol/pins';
import { PKI_VALIDITY_DAYS, type PkiBundle, type PkiRotatingKey } from '../bundle/bundle';
import { isSelfSigned, selfSignedSigningCertificate } from '../bundle/signing-certificate';
import { createRootCa, newEcKeyPair } from '../ca/ca';
import { isP256PrivateKey, loadIssuingCa, parsePair } from '../ca/issuing-ca';
import { toPem } from '../ca/x509-build';
import type { PkiKeyKind } from './kinds';
import type { ImportedKey } from './rotation';

const DAY_MS = 86_400_000;
const BACKDATE_MS = 3_600_000;

/** The common name of each CA the server makes (as `pki init` names them). */
const CA_NAMES: Partial<Record<PkiKeyKind, string>> = {
  'serving-ca': 'Better Compute serving CA',
  'node-ca': 'Better Compute node CA',
  'command-signing': 'Better Compute command-signing CA',
};

const pkcs8 = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }) as string;
const invalid = (message: string) => new DomainError('INVALID_ARGUMENT', message, { field: 'from' });

/**
 * A new `kind` key made by the server, as `pki init` makes its keys: P-256, a self-signed CA for the three CAs,
 * a self-signed (cA=false) certificate for the join-signing key, no certificate for the join-encryption key;
 * valid for ten years from an hour ago.
 */
export function makeRotatingKey(kind: PkiKeyKind, now = new Date()): PkiRotatingKey {
  const notBefore = new Date(Math.floor(now.getTime() / 1000) * 1000 - BACKDATE_MS);
  const notAfter = new Date(notBefore.getTime() + PKI_VALIDITY_DAYS * DAY_MS);
  const caName = CA_NAMES[kind];
  if (caName) {
    const ca = createRootCa(caName, notBefore, notAfter);
    return { phase: 'prepared', certificatePem: toPem(ca.certDer), privateKeyPem: pkcs8(ca.key) };
  }
  const pair = newEcKeyPair();
  if (kind === 'join-encryption') return { phase: 'prepared', privateKeyPem: pkcs8(pair.privateKey) };
  return {
    phase: 'prepared',
    certificatePem: toPem(selfSignedSigningCertificate(pair.privateKey, notBefore, notAfter)),
    privateKeyPem: pkcs8(pair.privateKey),
  };
}

/**
 * Checks a key brought from outside (a CA kept offline) and returns it as a prepared rotating key: the private
 * key is P-256 (PKCS#8 PEM); for every kind but join-encryption a certificate is required, matches the key and
 * is valid at `now` for at least a day more; the three CAs must be CA certificates, the join-signing certificate
 * must not be one and must be self-signed.
 *
 * @throws DomainError `INVALID_ARGUMENT` (field `from`) saying what is wrong, never quoting key material.
 */
export function importRotatingKey(kind: PkiKeyKind, from: ImportedKey, now = new Date()): PkiRotatingKey {
  if (kind === 'join-encryption') {
    let key: KeyObject;
    try {
      key = createPrivateKey(from.privateKeyPem);
    } catch {
      throw invalid('The imported private key does not parse (PKCS#8 PEM expected)');
    }
    if (!isP256PrivateKey(key)) throw invalid('The imported key is not an EC P-256 private key');
    return { phase: 'prepared', privateKeyPem: pkcs8(key) };
  }
  if (!from.certificatePem) throw invalid(`A ${kind} key is imported with its certificate (--certificate)`);
  let cert: X509Certificate;
  let key: KeyObject;
  try {
    ({ cert, key } = parsePair({ certificatePem: from.certificatePem, privateKeyPem: from.privateKeyPem }, 'imported'));
  } catch (error) {
    throw error instanceof DomainError ? invalid(error.message) : error;
  }
  const from_ = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  if (!(from_ <= now.getTime() && now.getTime() + DAY_MS <= to)) {
    throw invalid('The imported certificate is not valid now, or expires within a day');
  }
  if (CA_NAMES[kind]) {
    try {
      loadIssuingCa({ certificatePem: from.certificatePem, privateKeyPem: from.privateKeyPem }, 'imported');
    } catch (error) {
      throw error instanceof DomainError ? invalid(error.message) : error;
    }
  } else {
    if (cert.ca) throw invalid('The imported join-signing certificate must not be a CA certificate');
    if (!isSelfSigned(cert)) throw invalid('The imported join-signing certificate must be self-signed');
  }
  return { phase: 'prepared', certificatePem: cert.toString(), privateKeyPem: pkcs8(key) };
}

/** The key of `kind` in use in `bundle`, in the shape of a rotating key (without a phase). */
export function currentKeyOf(bundle: PkiBundle, kind: PkiKeyKind): Omit<PkiRotatingKey, 'phase'> {
  switch (kind) {
    case 'serving-ca':
      return bundle.servingCa;
    case 'node-ca':
      return bundle.nodeCa;
    case 'command-signing':
      return bundle.commandCa;
    case 'join-signing':
      return bundle.signingKey;
    case 'join-encryption':
      return bundle.encryptionKey;
  }
}

/** The pin of a key (its certificate's key, or the public half of the private key). */
export function pinOfKey(key: Omit<PkiRotatingKey, 'phase'>): string {
  return key.certificatePem ? spkiPin(key.certificatePem) : spkiPin(createPublicKey(key.privateKeyPem));
}

import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import {
  authorityKeyIdentifier,
  basicConstraints,
  buildCertificate,
  encodeName,
  keyIdentifier,
  KEY_USAGE,
  keyUsage,
  OIDS,
  randomSerial,
  subjectKeyIdentifier,
} from './x509-build';

/** A P-256 key pair as node:crypto objects plus the public key's DER SubjectPublicKeyInfo. */
interface EcKeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
  spkiDer: Buffer;
}

/** A fresh P-256 key pair. */
export function newEcKeyPair(): EcKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { privateKey, publicKey, spkiDer: publicKey.export({ type: 'spki', format: 'der' }) };
}

/** A certificate authority in memory: its key, its DER certificate and what children need from it. */
export interface IssuingCa {
  key: KeyObject;
  certDer: Buffer;
  subject: Buffer;
  keyId: Buffer;
}

/**
 * A self-signed P-256 root: basicConstraints cA (critical) with path length 0, since every CA here signs only
 * leaves, and keyUsage keyCertSign + cRLSign (critical).
 */
export function createRootCa(commonName: string, notBefore: Date, notAfter: Date): IssuingCa {
  const keys = newEcKeyPair();
  const subject = encodeName([[OIDS.commonName, commonName]]);
  const keyId = keyIdentifier(keys.spkiDer);
  const certDer = selfSignedCertificate(keys.privateKey, keys.spkiDer, subject, { notBefore, notAfter }, [
    basicConstraints(true, 0),
    keyUsage([KEY_USAGE.keyCertSign, KEY_USAGE.cRLSign]),
    subjectKeyIdentifier(keyId),
  ]);
  return { key: keys.privateKey, certDer, subject, keyId };
}

/** A certificate whose issuer is its `subject`, signed by its own `key` (whose SubjectPublicKeyInfo is `spkiDer`). */
export function selfSignedCertificate(
  key: KeyObject,
  spkiDer: Buffer,
  subject: Buffer,
  validity: { notBefore: Date; notAfter: Date },
  extensions: Buffer[],
): Buffer {
  return buildCertificate({ serial: randomSerial(), issuer: subject, subject, ...validity, spkiDer, extensions, signingKey: key });
}

/** What {@link issueLeaf} needs besides the CA. */
interface LeafRequest {
  subject: Buffer;
  spkiDer: Buffer;
  notBefore: Date;
  notAfter: Date;
  /** Extensions after basicConstraints cA=false and keyUsage digitalSignature (both critical). */
  extensions?: Buffer[];
}

/** An end-entity certificate signed by `ca`, with subject and authority key identifiers. */
export function issueLeaf(ca: IssuingCa, request: LeafRequest): Buffer {
  return buildCertificate({
    serial: randomSerial(),
    issuer: ca.subject,
    subject: request.subject,
    notBefore: request.notBefore,
    notAfter: request.notAfter,
    spkiDer: request.spkiDer,
    extensions: [
      basicConstraints(false),
      keyUsage([KEY_USAGE.digitalSignature]),
      ...(request.extensions ?? []),
      authorityKeyIdentifier(ca.keyId),
      subjectKeyIdentifier(keyIdentifier(request.spkiDer)),
    ],
    signingKey: ca.key,
  });
}

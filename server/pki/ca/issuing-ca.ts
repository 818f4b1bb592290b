import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { DerError, childAt, contentOf, encodingOf, readChildren, readRoot, type DerElement } from '../../../protocol/der/reader';
import { DomainError } from '../../../protocol/errors';
import type { IssuingCa } from './ca';
import { keyIdentifier } from './x509-build';

const SKI_OID = Buffer.from([0x55, 0x1d, 0x0e]);

/** The parts of a CA certificate its children copy: the subject Name's exact DER, its SPKI and key identifier. */
interface CaIdentity {
  subject: Buffer;
  spkiDer: Buffer;
  /** The subjectKeyIdentifier extension's value, or the SHA-1 of the key bits when the CA has none. */
  keyId: Buffer;
}

/** Reads {@link CaIdentity} from a certificate's DER. Throws a plain Error on malformed input. */
export function caIdentity(certDer: Buffer): CaIdentity {
  const fields = readChildren(certDer, childAt(readChildren(certDer, readRoot(certDer)), 0, 'tbsCertificate'));
  const offset = fields[0]?.tag === 0xa0 ? 1 : 0;
  const subjectNode = fields[offset + 4];
  const spkiNode = fields[offset + 5];
  if (subjectNode?.tag !== 0x30 || spkiNode?.tag !== 0x30) throw new Error('malformed certificate');
  const spkiDer = encodingOf(certDer, spkiNode);
  const extensions = fields.slice(offset + 6).find((node) => node.tag === 0xa3);
  return {
    subject: encodingOf(certDer, subjectNode),
    spkiDer,
    keyId: (extensions && subjectKeyIdentifierOf(certDer, extensions)) ?? keyIdentifier(spkiDer),
  };
}

function subjectKeyIdentifierOf(der: Buffer, extensionsNode: DerElement): Buffer | undefined {
  const list = childAt(readChildren(der, extensionsNode), 0, 'extensions');
  for (const ext of readChildren(der, list)) {
    const parts = readChildren(der, ext);
    const [oid] = parts;
    const last = parts.at(-1);
    if (!oid || !last) throw new DerError('malformed extension');
    if (oid.tag !== 0x06 || !contentOf(der, oid).equals(SKI_OID)) continue;
    const value = contentOf(der, last);
    return contentOf(value, readRoot(value));
  }
  return undefined;
}

/**
 * Loads a CA from PEM and checks it: the certificate parses and says cA, and the private key is its P-256 key.
 *
 * @param what names the CA in errors (`node CA`); errors never include key material.
 * @throws DomainError `INVALID_CONFIG` naming the CA and what is wrong.
 */
export function loadIssuingCa(pair: { certificatePem: string; privateKeyPem: string }, what: string): IssuingCa {
  const { cert, key } = parsePair(pair, what);
  if (!cert.ca) throw new DomainError('INVALID_CONFIG', `The ${what} certificate is not a CA certificate`);
  const certDer = cert.raw;
  try {
    const identity = caIdentity(certDer);
    return { key, certDer, subject: identity.subject, keyId: identity.keyId };
  } catch {
    throw new DomainError('INVALID_CONFIG', `The ${what} certificate does not parse`);
  }
}

/** Parses a certificate and its private key and checks that they belong together and are P-256. */
export function parsePair(
  pair: { certificatePem: string; privateKeyPem: string },
  what: string,
): { cert: X509Certificate; key: KeyObject } {
  let cert: X509Certificate;
  let key: KeyObject;
  try {
    cert = new X509Certificate(pair.certificatePem);
  } catch {
    throw new DomainError('INVALID_CONFIG', `The ${what} certificate does not parse`);
  }
  try {
    key = createPrivateKey(pair.privateKeyPem);
  } catch {
    throw new DomainError('INVALID_CONFIG', `The ${what} private key does not parse`);
  }
  if (!isP256PrivateKey(key)) throw new DomainError('INVALID_CONFIG', `The ${what} private key is not an EC P-256 key`);
  if (!cert.checkPrivateKey(key)) throw new DomainError('INVALID_CONFIG', `The ${what} private key does not match its certificate`);
  return { cert, key };
}

/** Whether `key` is a private EC key on P-256. */
export function isP256PrivateKey(key: KeyObject): boolean {
  return key.type === 'private' && key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
}

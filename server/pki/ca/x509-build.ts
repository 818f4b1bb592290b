import { createHash, randomFillSync, sign, type KeyObject } from 'node:crypto';
import { childAt, contentOf, readChildren, readRoot } from '../../../protocol/der/reader';
import {
  bitString,
  booleanTrue,
  explicit,
  implicit,
  octetString,
  oid,
  sequence,
  set,
  smallInteger,
  time,
  unsignedInteger,
  utf8String,
} from '../../../protocol/der/writer';
import { ipAddressBytes } from './ip-address';

/** Object identifiers the PKI writes. None is under a private arc (1.3.6.1.4.1), so Go's crypto/x509 parses all. */
export const OIDS = {
  commonName: '2.5.4.3',
  organizationalUnit: '2.5.4.11',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extendedKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  subjectKeyIdentifier: '2.5.29.14',
  authorityKeyIdentifier: '2.5.29.35',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
} as const;

/** AlgorithmIdentifier for ecdsa-with-SHA256 (parameters absent, RFC 5758 §3.2). */
export const ECDSA_WITH_SHA256 = sequence(oid(OIDS.ecdsaWithSha256));
/** `[0] EXPLICIT INTEGER 2`: certificate version 3. */
export const VERSION_3 = explicit(0, smallInteger(2));

/** A distinguished name of single-valued RDNs, each a UTF8String, in the order given. */
export function encodeName(attributes: ReadonlyArray<readonly [oid: string, value: string]>): Buffer {
  return sequence(...attributes.map(([type, value]) => set(sequence(oid(type), utf8String(value)))));
}

/** An Extension: `SEQUENCE { extnID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING }`. */
function extension(type: string, critical: boolean, value: Uint8Array): Buffer {
  return critical ? sequence(oid(type), booleanTrue(), octetString(value)) : sequence(oid(type), octetString(value));
}

/** basicConstraints, always critical; a CA may carry a path length. cA FALSE is the DER default, so omitted. */
export function basicConstraints(ca: boolean, pathLength?: number): Buffer {
  const value = ca ? sequence(booleanTrue(), ...(pathLength === undefined ? [] : [smallInteger(pathLength)])) : sequence();
  return extension(OIDS.basicConstraints, true, value);
}

/** keyUsage bit positions (RFC 5280 §4.2.1.3). */
export const KEY_USAGE = { digitalSignature: 0, keyCertSign: 5, cRLSign: 6 } as const;

/** keyUsage, critical, as a minimal named-bit BIT STRING. */
export function keyUsage(bits: ReadonlyArray<(typeof KEY_USAGE)[keyof typeof KEY_USAGE]>): Buffer {
  const highest = Math.max(...bits);
  const bytes = new Uint8Array(Math.floor(highest / 8) + 1);
  // bytes holds floor(highest / 8) + 1 octets, so every bit's octet exists.
  for (const bit of bits) bytes[bit >> 3]! |= 0x80 >> (bit & 7);
  return extension(OIDS.keyUsage, true, bitString(bytes, 7 - (highest % 8)));
}

/** extendedKeyUsage, not critical. */
export function extendedKeyUsage(purposes: readonly string[]): Buffer {
  return extension(OIDS.extendedKeyUsage, false, sequence(...purposes.map((purpose) => oid(purpose))));
}

/** A GeneralName this PKI writes. */
export type GeneralName = { type: 'dns' | 'uri' | 'ip'; value: string };

/** subjectAltName, not critical (every certificate here also has a subject). */
export function subjectAltName(names: readonly GeneralName[]): Buffer {
  const encoded = names.map(({ type, value }) =>
    type === 'dns'
      ? implicit(2, Buffer.from(value, 'latin1'))
      : type === 'uri'
        ? implicit(6, Buffer.from(value, 'latin1'))
        : implicit(7, ipAddressBytes(value)),
  );
  return extension(OIDS.subjectAltName, false, sequence(...encoded));
}

/** subjectKeyIdentifier: the SHA-1 of the subjectPublicKey bits (RFC 5280 §4.2.1.2, method 1). */
export function keyIdentifier(spkiDer: Buffer): Buffer {
  const spki = readRoot(spkiDer);
  const bits = childAt(readChildren(spkiDer, spki), 1, 'subjectPublicKey');
  return createHash('sha1').update(contentOf(spkiDer, bits).subarray(1)).digest();
}

/** subjectKeyIdentifier extension, not critical. */
export const subjectKeyIdentifier = (keyId: Uint8Array): Buffer => extension(OIDS.subjectKeyIdentifier, false, octetString(keyId));
/** authorityKeyIdentifier extension with only keyIdentifier, not critical. */
export const authorityKeyIdentifier = (keyId: Uint8Array): Buffer =>
  extension(OIDS.authorityKeyIdentifier, false, sequence(implicit(0, keyId)));

/** A random positive serial of 16 octets: high bit clear and first octet nonzero, so it encodes in 16. */
export function randomSerial(): Buffer {
  const serial = randomFillSync(Buffer.allocUnsafe(16));
  serial[0] = serial[0]! & 0x7f || 0x01; // 16 octets were just filled
  return serial;
}

/** What {@link buildCertificate} signs. */
interface CertificateFields {
  serial: Uint8Array;
  issuer: Buffer;
  subject: Buffer;
  notBefore: Date;
  notAfter: Date;
  spkiDer: Buffer;
  extensions: Buffer[];
  /** The issuer's P-256 private key; the signature is ecdsa-with-SHA256. */
  signingKey: KeyObject;
}

/** Encodes the TBSCertificate, signs it and returns the Certificate's DER. */
export function buildCertificate(fields: CertificateFields): Buffer {
  const tbs = sequence(
    VERSION_3,
    unsignedInteger(fields.serial),
    ECDSA_WITH_SHA256,
    fields.issuer,
    sequence(time(fields.notBefore), time(fields.notAfter)),
    fields.subject,
    fields.spkiDer,
    explicit(3, sequence(...fields.extensions)),
  );
  return signTbs(tbs, fields.signingKey);
}

/** `Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue }` with an ECDSA signature. */
export function signTbs(tbs: Buffer, key: KeyObject): Buffer {
  const signature = sign('sha256', tbs, { key, dsaEncoding: 'der' });
  return sequence(tbs, ECDSA_WITH_SHA256, bitString(signature));
}

/** PEM armor for DER (`CERTIFICATE` unless told). */
export function toPem(der: Uint8Array, label = 'CERTIFICATE'): string {
  const body = Buffer.from(der)
    .toString('base64')
    .replace(/.{1,64}/g, '$&\n');
  return `-----BEGIN ${label}-----\n${body}-----END ${label}-----\n`;
}

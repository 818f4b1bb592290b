import { createHash, randomFillSync } from 'node:crypto';
import { TAG } from '../../../protocol/der/tags';
import { explicit, octetString, oid, sequence, time, tlv } from '../../../protocol/der/writer';
import { DomainError } from '../../../protocol/errors';
import { prepareIssuer, type NodeCertificateIssuer } from './node-certificate-issuer';
import { parseTrustDomain } from '../ca/trust-domain';
import { ECDSA_WITH_SHA256, encodeName, OIDS, signTbs, VERSION_3 } from '../ca/x509-build';
import { isP256Point, P256_SPKI_PREFIX } from '../../../protocol/p256';

/** The agent roles a node certificate can carry (`OU=bc-role:<role>`). */
export const NODE_CERTIFICATE_ROLES = ['node', 'site', 'ramdisk', 'node-tenant'] as const;
/** One of {@link NODE_CERTIFICATE_ROLES}. */
export type NodeCertificateRole = (typeof NODE_CERTIFICATE_ROLES)[number];

/** Longest node certificate lifetime (one day), and the ramdisk's (two hours). */
export const MAX_NODE_CERT_TTL_SECONDS = 86_400;
/** Longest ramdisk certificate lifetime. */
export const MAX_RAMDISK_CERT_TTL_SECONDS = 7_200;
/**
 * How long before its issuance a node certificate's validity starts: five minutes, or a tenth of the lifetime
 * when that is shorter. A machine that joins before its clock is synchronised (a PXE ramdisk on its RTC, a VM
 * just resumed) can run minutes behind; without this it would hold a certificate that is not yet valid and fail
 * its first TLS handshakes. Five minutes covers common drift while keeping the window before issuance short; the
 * certificate certifies a key made for this join, so the earlier start grants nothing to anyone else. The
 * backdate counts inside the lifetime (protocol.md: "Valid for" is notAfter − notBefore), so a one-day
 * certificate ends 23 h 55 min after its issuance, never later than its maximum allows.
 */
export const NODE_CERT_BACKDATE_SECONDS = 300;

/** The backdate of a certificate of `ttlSeconds`: {@link NODE_CERT_BACKDATE_SECONDS}, at most a tenth of the lifetime. */
export function nodeCertBackdateSeconds(ttlSeconds: number): number {
  return Math.min(NODE_CERT_BACKDATE_SECONDS, Math.floor(ttlSeconds / 10));
}
const MAX_EXTRA_URIS = 8;

/**
 * The lifetime a certificate of `role` gets when the deployment's node certificate lifetime is
 * `configuredSeconds`: the configured one, capped at {@link MAX_RAMDISK_CERT_TTL_SECONDS} for a ramdisk. The one
 * rule every issuing path uses (the early signing before the admission lock and the admission itself), so
 * neither can ask {@link issueNodeCertificate} for a lifetime it refuses.
 */
export function certificateTtlFor(role: string, configuredSeconds: number): number {
  return role === 'ramdisk' ? Math.min(configuredSeconds, MAX_RAMDISK_CERT_TTL_SECONDS) : configuredSeconds;
}

/** What JoinService decided to certify. Names come only from here, never from the CSR. */
export interface NodeCertificateRequest {
  /** The node's public key, DER SubjectPublicKeyInfo; must be EC P-256 with an uncompressed point. */
  publicKeySpkiDer: Uint8Array;
  trustDomain: string;
  siteId: string;
  nodeId: string;
  role: NodeCertificateRole;
  /**
   * The issuance time (the database's now), truncated to the second. The certificate's notBefore is
   * {@link nodeCertBackdateSeconds} earlier; its notAfter is that notBefore plus `ttlSeconds`, or the CA's
   * notAfter when that comes first.
   */
  notBefore: Date;
  /** Lifetime (notAfter − notBefore, the backdate included) in whole seconds: 1 to 86,400, or to 7,200 for `ramdisk`. */
  ttlSeconds: number;
  /** Serial octets, 1 to 20, first octet 0x01 to 0x7f; a random 16-octet serial when absent. */
  serial?: Uint8Array;
  /** Statements about the node key written after the SPIFFE ID; only `urn:bc:` URIs (such as `urn:bc:tpm-ak:…`). */
  extraUris?: readonly string[];
}

/** An issued node certificate. */
export interface IssuedNodeCertificate {
  der: Buffer;
  /** The serial octets in lowercase hex. */
  serialHex: string;
  /** The encoded validity: notBefore backdated from the issuance, notAfter `ttlSeconds` later, capped at the CA's. */
  notBefore: Date;
  notAfter: Date;
  /** `spiffe://<trustDomain>/site/<siteId>/node/<nodeId>`, the certificate's first SAN. */
  spiffeId: string;
}

const SUBJECTS = Object.fromEntries(
  NODE_CERTIFICATE_ROLES.map((role) => [role, encodeName([[OIDS.organizationalUnit, `bc-role:${role}`]])]),
) as Record<NodeCertificateRole, Buffer>;
const SAN_OID = oid(OIDS.subjectAltName);
const SKI_OID = oid(OIDS.subjectKeyIdentifier);
const ID_SEGMENT = /^[A-Za-z0-9._-]{1,128}$/;
const BC_URN = /^urn:bc:[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]{1,500}$/;

/**
 * Issues a node's client certificate, the profile `protocol.md` fixes: X.509 v3; a positive serial of at most 20
 * octets; issuer = the node CA's subject; subject exactly `OU=bc-role:<role>`; validity from
 * {@link nodeCertBackdateSeconds} before the issuance, for ttlSeconds in all, never past the CA's notAfter;
 * the given P-256 key; basicConstraints cA=false and keyUsage digitalSignature (both critical), extendedKeyUsage
 * serverAuth and clientAuth (the SPIFFE X509-SVID rule), subjectAltName with the SPIFFE ID first and then only `urn:bc:` URIs,
 * authority and subject key identifiers; signed ecdsa-with-SHA256. No tenant and no private-arc OID appear.
 *
 * This is JoinService's hot path, so the DER is written directly (no ASN.1 library) from bytes cached per CA;
 * the cost is one ECDSA signature plus a few microseconds.
 *
 * @throws DomainError `INVALID_ARGUMENT` (with the field) for a bad request; `INVALID_CONFIG` for an unusable CA
 *   (one that has expired at the issuance included).
 */
export function issueNodeCertificate(ca: NodeCertificateIssuer, request: NodeCertificateRequest): IssuedNodeCertificate {
  const issuer = prepareIssuer(ca);
  const { role, ttlSeconds } = request;
  if (typeof role !== 'string' || !Object.hasOwn(SUBJECTS, role)) invalid('role', `must be one of ${NODE_CERTIFICATE_ROLES.join(', ')}`);
  const maxTtl = role === 'ramdisk' ? MAX_RAMDISK_CERT_TTL_SECONDS : MAX_NODE_CERT_TTL_SECONDS;
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > maxTtl) {
    invalid('ttlSeconds', `must be a whole number of seconds from 1 to ${maxTtl} for role ${role}`);
  }
  if (!(request.notBefore instanceof Date) || Number.isNaN(request.notBefore.getTime())) invalid('notBefore', 'must be a valid date');
  const spki = checkedSpki(request.publicKeySpkiDer);
  const spiffeId = `spiffe://${checkedTrustDomain(request.trustDomain)}/site/${checkedSegment('siteId', request.siteId)}/node/${checkedSegment('nodeId', request.nodeId)}`;
  const uris = [spiffeId, ...checkedExtraUris(request.extraUris)];
  const serial = request.serial === undefined ? nextRandomSerial() : checkedSerial(request.serial);

  const issuedAt = Math.floor(request.notBefore.getTime() / 1000) * 1000;
  if (issuedAt >= issuer.notAfter.getTime())
    throw new DomainError('INVALID_CONFIG', 'The node CA has expired: it can issue no certificate');
  const notBefore = new Date(issuedAt - nodeCertBackdateSeconds(ttlSeconds) * 1000);
  const notAfter = new Date(Math.min(notBefore.getTime() + ttlSeconds * 1000, issuer.notAfter.getTime()));
  const san = sequence(SAN_OID, octetString(sequence(...uris.map((uri) => tlv(0x86, Buffer.from(uri, 'latin1'))))));
  const keyId = createHash('sha1').update(spki.subarray(P256_SPKI_PREFIX.length)).digest();
  const ski = sequence(SKI_OID, octetString(octetString(keyId)));

  const tbs = sequence(
    VERSION_3,
    tlv(TAG.integer, serial),
    ECDSA_WITH_SHA256,
    issuer.issuerName,
    sequence(time(notBefore), time(notAfter)),
    SUBJECTS[role],
    spki,
    explicit(3, sequence(issuer.constantExtensions, san, ski)),
  );
  return { der: signTbs(tbs, ca.key), serialHex: serial.toString('hex'), notBefore, notAfter, spiffeId };
}

function invalid(field: string, problem: string): never {
  throw new DomainError('INVALID_ARGUMENT', `${field}: ${problem}`, { field });
}

function checkedSpki(der: Uint8Array): Buffer {
  if (!(der instanceof Uint8Array)) invalid('publicKeySpkiDer', 'must be DER bytes');
  const spki = Buffer.from(der.buffer, der.byteOffset, der.byteLength);
  // A P-256 SPKI with an uncompressed point has one encoding; comparing it checks both OIDs and the layout.
  if (spki.length !== P256_SPKI_PREFIX.length + 65 || !spki.subarray(0, P256_SPKI_PREFIX.length).equals(P256_SPKI_PREFIX)) {
    invalid('publicKeySpkiDer', 'must be an EC P-256 SubjectPublicKeyInfo (id-ecPublicKey, prime256v1, uncompressed point)');
  }
  if (!isP256Point(spki.subarray(P256_SPKI_PREFIX.length))) invalid('publicKeySpkiDer', 'the public key is not a point on P-256');
  return spki;
}

const trustDomains = new Set<string>();
function checkedTrustDomain(value: string): string {
  if (trustDomains.has(value)) return value;
  parseTrustDomain(value);
  if (trustDomains.size >= 16) trustDomains.clear();
  trustDomains.add(value);
  return value;
}

function checkedSegment(field: string, value: string): string {
  if (typeof value !== 'string' || !ID_SEGMENT.test(value) || value === '.' || value === '..') {
    invalid(field, 'must be 1 to 128 characters of A-Z, a-z, 0-9, ".", "_" or "-"');
  }
  return value;
}

function checkedExtraUris(extra: readonly string[] | undefined): readonly string[] {
  if (extra === undefined || extra.length === 0) return [];
  if (!Array.isArray(extra) || extra.length > MAX_EXTRA_URIS) invalid('extraUris', `must be a list of at most ${MAX_EXTRA_URIS} URIs`);
  for (const uri of extra) {
    if (typeof uri !== 'string' || !BC_URN.test(uri)) invalid('extraUris', 'only urn:bc: URIs may follow the SPIFFE ID');
  }
  if (new Set(extra).size !== extra.length) invalid('extraUris', 'must not repeat a URI');
  return extra;
}

function checkedSerial(value: Uint8Array): Buffer {
  if (!(value instanceof Uint8Array) || value.length < 1 || value.length > 20 || value[0] === 0 || value[0]! & 0x80) {
    invalid('serial', 'must be 1 to 20 octets with a first octet from 0x01 to 0x7f (a positive, minimally encoded integer)');
  }
  return Buffer.from(value);
}

// Serials come from a pooled random buffer: one getrandom call per 256 certificates instead of one each.
let serialPool = Buffer.alloc(0);
let serialOffset = 0;
function nextRandomSerial(): Buffer {
  if (serialOffset + 16 > serialPool.length) {
    serialPool = randomFillSync(Buffer.allocUnsafeSlow(4096));
    serialOffset = 0;
  }
  const serial = serialPool.subarray(serialOffset, (serialOffset += 16));
  serial[0] = serial[0]! & 0x7f || 0x01; // a 16-octet slice of the pool
  return serial;
}

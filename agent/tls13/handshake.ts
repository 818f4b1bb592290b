import {
  createECDH,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  randomBytes,
  verify,
  constants,
  type KeyObject,
} from 'node:crypto';
import { ALERT, TlsAlertError } from './alerts';
import { extension, readExtensions, u16, vector16, vector24, vector8, WireReader } from './wire';

/** HandshakeType (RFC 8446 §4). */
export const HANDSHAKE = {
  clientHello: 1,
  serverHello: 2,
  newSessionTicket: 4,
  encryptedExtensions: 8,
  certificate: 11,
  certificateRequest: 13,
  certificateVerify: 15,
  finished: 20,
  keyUpdate: 24,
} as const;

const EXT = {
  serverName: 0,
  supportedGroups: 10,
  signatureAlgorithms: 13,
  alpn: 16,
  supportedVersions: 43,
  keyShare: 51,
} as const;

const TLS13 = 0x0304;
const TLS_AES_128_GCM_SHA256 = 0x1301;
const GROUP = { x25519: 0x001d, secp256r1: 0x0017 } as const;

/** SignatureScheme values (§4.2.3). */
export const SCHEME = {
  ecdsaSecp256r1Sha256: 0x0403,
  ecdsaSecp384r1Sha384: 0x0503,
  ecdsaSecp521r1Sha512: 0x0603,
  ed25519: 0x0807,
  rsaPssRsaeSha256: 0x0804,
  rsaPssRsaeSha384: 0x0805,
  rsaPssRsaeSha512: 0x0806,
  rsaPssPssSha256: 0x0809,
  rsaPssPssSha384: 0x080a,
  rsaPssPssSha512: 0x080b,
} as const;

/** What the server's CertificateVerify may use: every TLS 1.3 scheme but the RSA PKCS#1 v1.5 ones (§4.4.3). */
const SERVER_SCHEMES: Record<number, { hash: string | null; keyType: string; curve?: string; pss?: boolean }> = {
  [SCHEME.ecdsaSecp256r1Sha256]: { hash: 'sha256', keyType: 'ec', curve: 'prime256v1' },
  [SCHEME.ecdsaSecp384r1Sha384]: { hash: 'sha384', keyType: 'ec', curve: 'secp384r1' },
  [SCHEME.ecdsaSecp521r1Sha512]: { hash: 'sha512', keyType: 'ec', curve: 'secp521r1' },
  [SCHEME.ed25519]: { hash: null, keyType: 'ed25519' },
  [SCHEME.rsaPssRsaeSha256]: { hash: 'sha256', keyType: 'rsa', pss: true },
  [SCHEME.rsaPssRsaeSha384]: { hash: 'sha384', keyType: 'rsa', pss: true },
  [SCHEME.rsaPssRsaeSha512]: { hash: 'sha512', keyType: 'rsa', pss: true },
  [SCHEME.rsaPssPssSha256]: { hash: 'sha256', keyType: 'rsa-pss', pss: true },
  [SCHEME.rsaPssPssSha384]: { hash: 'sha384', keyType: 'rsa-pss', pss: true },
  [SCHEME.rsaPssPssSha512]: { hash: 'sha512', keyType: 'rsa-pss', pss: true },
};

/** ServerHello.random of a HelloRetryRequest (§4.1.3). */
const HELLO_RETRY_RANDOM = Buffer.from('cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c', 'hex');

/** The client's ephemeral keys, one per offered group; the server picks one. */
export interface KeyShares {
  x25519: { privateKey: KeyObject; publicRaw: Buffer };
  secp256r1: ReturnType<typeof createECDH>;
}

export function makeKeyShares(): KeyShares {
  const { privateKey, publicKey } = generateKeyPairSync('x25519');
  const publicRaw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  const secp256r1 = createECDH('prime256v1');
  secp256r1.generateKeys();
  return { x25519: { privateKey, publicRaw }, secp256r1 };
}

/**
 * The ClientHello body: TLS 1.3 only, TLS_AES_128_GCM_SHA256, key shares for x25519 and secp256r1 (so no
 * HelloRetryRequest is needed), a random legacy_session_id (middlebox compatibility, §D.4), SNI when
 * `serverName` is a DNS name, and ALPN when protocols are given.
 */
export function clientHelloBody(input: { shares: KeyShares; serverName?: string; alpn: readonly string[] }): Buffer {
  const extensions = [
    ...(input.serverName ? [extension(EXT.serverName, vector16(Buffer.from([0]), vector16(Buffer.from(input.serverName, 'ascii'))))] : []),
    extension(EXT.supportedGroups, vector16(u16(GROUP.x25519), u16(GROUP.secp256r1))),
    extension(EXT.signatureAlgorithms, vector16(...Object.keys(SERVER_SCHEMES).map((s) => u16(Number(s))))),
    ...(input.alpn.length ? [extension(EXT.alpn, vector16(...input.alpn.map((p) => vector8(Buffer.from(p, 'ascii')))))] : []),
    extension(EXT.supportedVersions, vector8(u16(TLS13))),
    extension(
      EXT.keyShare,
      vector16(
        u16(GROUP.x25519),
        vector16(input.shares.x25519.publicRaw),
        u16(GROUP.secp256r1),
        vector16(input.shares.secp256r1.getPublicKey()),
      ),
    ),
  ];
  return Buffer.concat([
    u16(0x0303),
    randomBytes(32),
    vector8(randomBytes(32)),
    vector16(u16(TLS_AES_128_GCM_SHA256)),
    vector8(Buffer.from([0])),
    vector16(...extensions),
  ]);
}

/** Reads the ServerHello and computes the (EC)DHE shared secret with the share the server chose. */
export function readServerHello(body: Buffer, clientHello: Buffer, shares: KeyShares): Buffer {
  const reader = new WireReader(body, 'the ServerHello');
  if (reader.u16() !== 0x0303) throw new TlsAlertError(ALERT.protocolVersion, 'the ServerHello has another legacy_version');
  const random = reader.bytes(32);
  if (random.equals(HELLO_RETRY_RANDOM)) throw new TlsAlertError(ALERT.handshakeFailure, 'the server asked for a HelloRetryRequest');
  const sessionId = reader.vector8();
  // The ClientHello's legacy_session_id sits after legacy_version (2) and random (32), with its length byte.
  if (!sessionId.equals(clientHello.subarray(35, 35 + clientHello[34]!)))
    throw new TlsAlertError(ALERT.illegalParameter, 'the ServerHello does not echo the session id');
  if (reader.u16() !== TLS_AES_128_GCM_SHA256) throw new TlsAlertError(ALERT.illegalParameter, 'the server chose a suite not offered');
  if (reader.u8() !== 0) throw new TlsAlertError(ALERT.illegalParameter, 'the server chose a compression method');
  const extensions = readExtensions(reader.vector16(), 'the ServerHello');
  reader.end();
  for (const type of extensions.keys())
    if (type !== EXT.supportedVersions && type !== EXT.keyShare)
      throw new TlsAlertError(ALERT.unsupportedExtension, `the ServerHello carries extension ${type}`);
  const version = extensions.get(EXT.supportedVersions);
  if (!version || version.length !== 2 || version.readUInt16BE(0) !== TLS13)
    throw new TlsAlertError(ALERT.protocolVersion, 'the server does not speak TLS 1.3');
  const keyShare = extensions.get(EXT.keyShare);
  if (!keyShare) throw new TlsAlertError(ALERT.missingExtension, 'the ServerHello carries no key share');
  const share = new WireReader(keyShare, 'the key share');
  const group = share.u16();
  const key = share.vector16();
  share.end();
  let secret: Buffer;
  try {
    if (group === GROUP.x25519 && key.length === 32) {
      const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: key.toString('base64url') }, format: 'jwk' });
      secret = diffieHellman({ privateKey: shares.x25519.privateKey, publicKey });
    } else if (group === GROUP.secp256r1 && key.length === 65 && key[0] === 4) {
      secret = shares.secp256r1.computeSecret(key);
    } else {
      throw new Error('group');
    }
  } catch {
    throw new TlsAlertError(ALERT.illegalParameter, 'the server key share is not a valid x25519 or secp256r1 key');
  }
  // An all-zero X25519 result means a small-order point (§7.4.2).
  if (secret.every((b) => b === 0)) throw new TlsAlertError(ALERT.illegalParameter, 'the key exchange produced zero');
  return secret;
}

/** The ALPN protocol EncryptedExtensions names (one of the offered), or false. */
export function readEncryptedExtensions(body: Buffer, offered: readonly string[]): string | false {
  const reader = new WireReader(body, 'EncryptedExtensions');
  const extensions = readExtensions(reader.vector16(), 'EncryptedExtensions');
  reader.end();
  const alpn = extensions.get(EXT.alpn);
  if (!alpn) return false;
  const list = new WireReader(alpn, 'the ALPN extension');
  const names = new WireReader(list.vector16(), 'the ALPN list');
  list.end();
  const name = names.vector8().toString('ascii');
  names.end();
  if (!offered.includes(name)) throw new TlsAlertError(ALERT.noApplicationProtocol, `the server chose ALPN ${name}, not offered`);
  return name;
}

/** The certificate_request_context and the signature schemes a CertificateRequest accepts. */
export function readCertificateRequest(body: Buffer): { context: Buffer; schemes: number[] } {
  const reader = new WireReader(body, 'the CertificateRequest');
  const context = reader.vector8();
  const extensions = readExtensions(reader.vector16(), 'the CertificateRequest');
  reader.end();
  const algorithms = extensions.get(EXT.signatureAlgorithms);
  if (!algorithms) throw new TlsAlertError(ALERT.missingExtension, 'the CertificateRequest names no signature algorithms');
  const list = new WireReader(algorithms, 'signature_algorithms');
  const schemes = new WireReader(list.vector16(), 'signature_algorithms');
  list.end();
  const out: number[] = [];
  while (schemes.remaining) out.push(schemes.u16());
  return { context, schemes: out };
}

/** The DER certificates of a Certificate message, leaf first (§4.4.2); its context must be empty in the handshake. */
export function readCertificate(body: Buffer): Buffer[] {
  const reader = new WireReader(body, 'the Certificate');
  if (reader.vector8().length !== 0) throw new TlsAlertError(ALERT.illegalParameter, 'the server Certificate has a request context');
  const list = new WireReader(reader.vector24(), 'the certificate list');
  reader.end();
  const out: Buffer[] = [];
  while (list.remaining) {
    out.push(list.vector24());
    list.vector16(); // per-certificate extensions (OCSP, SCT): not used
  }
  return out;
}

/** A Certificate message of the client: the request's context, then each DER certificate without extensions. */
export const certificateBody = (context: Buffer, chain: readonly Buffer[]) =>
  Buffer.concat([vector8(context), vector24(...chain.map((der) => Buffer.concat([vector24(der), vector16()])))]);

/** The content a CertificateVerify signs (§4.4.3): 64 spaces, the context string, a zero byte, the transcript hash. */
export const certificateVerifyContent = (side: 'server' | 'client', transcriptHash: Buffer) =>
  Buffer.concat([Buffer.alloc(64, 0x20), Buffer.from(`TLS 1.3, ${side} CertificateVerify\0`, 'ascii'), transcriptHash]);

/** Checks the server's CertificateVerify with its leaf's key. */
export function verifyServerCertificateVerify(body: Buffer, leafKey: KeyObject, transcriptHash: Buffer): void {
  const reader = new WireReader(body, 'the CertificateVerify');
  const scheme = reader.u16();
  const signature = reader.vector16();
  reader.end();
  const rule = SERVER_SCHEMES[scheme];
  if (!rule) throw new TlsAlertError(ALERT.illegalParameter, `the server signed with scheme ${scheme}, not offered`);
  const curve = leafKey.asymmetricKeyDetails?.namedCurve;
  if (leafKey.asymmetricKeyType !== rule.keyType || (rule.curve && curve !== rule.curve))
    throw new TlsAlertError(ALERT.illegalParameter, `the server's scheme ${scheme} does not fit its certificate's key`);
  const content = certificateVerifyContent('server', transcriptHash);
  const key = rule.pss
    ? { key: leafKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }
    : { key: leafKey, dsaEncoding: 'der' as const };
  if (!verify(rule.hash, content, key, signature))
    throw new TlsAlertError(ALERT.decryptError, "the server's CertificateVerify does not verify");
}

/** The client's CertificateVerify message body. */
export const certificateVerifyBody = (scheme: number, signature: Buffer) => Buffer.concat([u16(scheme), vector16(signature)]);

import { createECDH, createHash, createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { TAG } from './der/tags';
import { bitString, sequence, set, tlv, utf8String } from './der/writer';
import { P256_SPKI_PREFIX } from './p256';

/** A fresh node key and the PKCS#10 request that asks JoinService to certify it. */
export interface NodeKeyAndCsr {
  readonly privateKey: KeyObject;
  /** PKCS#8 PEM, what `node.key` holds (encoded on first read: most simulated agents never store it). */
  readonly privateKeyPem: string;
  /** DER SubjectPublicKeyInfo of the key, what the issued leaf must certify. */
  readonly spkiDer: Buffer;
  /** DER PKCS#10. */
  readonly csrDer: Buffer;
  /** Lowercase hex SHA-256 of `csrDer`: the seal's `csr` and the answer's `csrSha256`. */
  readonly csrSha256: string;
}

const OID_COMMON_NAME = Buffer.from('550403', 'hex');
// SEQUENCE { OID ecdsa-with-SHA256 }, parameters absent (RFC 5758 §3.2).
const ECDSA_SHA256_ALGORITHM = Buffer.from('300a06082a8648ce3d040302', 'hex');

/**
 * Builds a DER PKCS#10 request for `privateKey`'s P-256 public key, self-signed with ECDSA SHA-256. Built
 * by hand with node:crypto because it runs once per join in every simulated agent. JoinService ignores the
 * subject; `commonName` only helps a human reading the request.
 */
export function createCsr(privateKey: KeyObject, spkiDer: Buffer, options: { commonName?: string } = {}): Buffer {
  const rdns = options.commonName ? [set(sequence(tlv(TAG.oid, OID_COMMON_NAME), utf8String(options.commonName)))] : [];
  const info = sequence(Buffer.from([0x02, 0x01, 0x00]), sequence(...rdns), spkiDer, Buffer.from([0xa0, 0x00]));
  const signature = sign('sha256', info, { key: privateKey, dsaEncoding: 'der' });
  return sequence(info, ECDSA_SHA256_ALGORITHM, bitString(signature));
}

/** P-256 private scalars are 32 bytes in a JWK (RFC 7518 §6.2.2.1), whatever their numeric value. */
const P256_SCALAR_BYTES = 32;

/**
 * The JWK `d` of a P-256 private scalar: exactly 32 bytes, left-padded with zeros. createECDH's getPrivateKey
 * drops leading zero bytes (one key in 256 has a 31-byte scalar), and RFC 7518 requires the full length; a
 * strict JOSE library refuses a short `d`.
 */
export function p256JwkD(scalar: Uint8Array): string {
  if (scalar.length > P256_SCALAR_BYTES) throw new Error('a P-256 private scalar is at most 32 bytes');
  const padded = Buffer.alloc(P256_SCALAR_BYTES);
  padded.set(scalar, P256_SCALAR_BYTES - scalar.length);
  try {
    return padded.toString('base64url');
  } finally {
    padded.fill(0);
  }
}

/** Imports a P-256 private key from its uncompressed public point (`04 || x || y`) and private scalar. */
export function p256PrivateKeyFromScalar(point: Buffer, scalar: Uint8Array): KeyObject {
  return createPrivateKey({
    key: { kty: 'EC', crv: 'P-256', x: point.toString('base64url', 1, 33), y: point.toString('base64url', 33, 65), d: p256JwkD(scalar) },
    format: 'jwk',
  });
}

/**
 * Generates a P-256 node key and its CSR. The key is made with createECDH, whose raw point gives the SPKI
 * directly (OpenSSL 3's SPKI encoder costs about 100 µs a call, and this runs once per join in every
 * simulated agent), and the private key is imported from its scalar. Not generateKeyPairSync: on Node 20,
 * exporting such a key as a JWK can deadlock the thread when a garbage collection lands inside the export
 * (the collected key-generation job's destructor takes the lock the export holds; seen in `bench:join`).
 */
export function generateNodeKeyAndCsr(options: { commonName?: string } = {}): NodeKeyAndCsr {
  const ecdh = createECDH('prime256v1');
  const point = ecdh.generateKeys();
  const scalar = ecdh.getPrivateKey();
  const privateKey = p256PrivateKeyFromScalar(point, scalar);
  scalar.fill(0);
  const spkiDer = Buffer.concat([P256_SPKI_PREFIX, point]);
  const csrDer = createCsr(privateKey, spkiDer, options);
  let pem: string | undefined;
  return {
    privateKey,
    get privateKeyPem() {
      pem ??= privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
      return pem;
    },
    spkiDer,
    csrDer,
    csrSha256: createHash('sha256').update(csrDer).digest('hex'),
  };
}

import { createHash, createHmac } from 'node:crypto';

/**
 * The TLS 1.3 key schedule (RFC 8446 §7.1) for SHA-256, the hash of TLS_AES_128_GCM_SHA256, the one suite this
 * client offers.
 */
const HASH = 'sha256';
const HASH_LENGTH = 32;

export const hash = (data: Buffer): Buffer => createHash(HASH).update(data).digest();
const hmac = (key: Buffer, data: Buffer): Buffer => createHmac(HASH, key).update(data).digest();

/** HKDF-Extract(salt, IKM) (RFC 5869 §2.2). */
const hkdfExtract = (salt: Buffer, ikm: Buffer): Buffer => hmac(salt.length ? salt : Buffer.alloc(HASH_LENGTH), ikm);

/** HKDF-Expand(PRK, info, L) (RFC 5869 §2.3). */
function hkdfExpand(prk: Buffer, info: Buffer, length: number): Buffer {
  const blocks: Buffer[] = [];
  let previous: Buffer = Buffer.alloc(0);
  for (let i = 1, total = 0; total < length; i++) {
    previous = hmac(prk, Buffer.concat([previous, info, Buffer.from([i])]));
    blocks.push(previous);
    total += previous.length;
  }
  return Buffer.concat(blocks).subarray(0, length);
}

/** HKDF-Expand-Label(Secret, Label, Context, Length): the HkdfLabel with "tls13 " before the label. */
export function hkdfExpandLabel(secret: Buffer, label: string, context: Buffer, length: number): Buffer {
  const fullLabel = Buffer.from(`tls13 ${label}`, 'ascii');
  const info = Buffer.concat([
    Buffer.from([length >> 8, length & 0xff, fullLabel.length]),
    fullLabel,
    Buffer.from([context.length]),
    context,
  ]);
  return hkdfExpand(secret, info, length);
}

/** Derive-Secret(Secret, Label, Messages), given the transcript hash of Messages. */
const deriveSecret = (secret: Buffer, label: string, transcriptHash: Buffer): Buffer =>
  hkdfExpandLabel(secret, label, transcriptHash, HASH_LENGTH);

const EMPTY_HASH = hash(Buffer.alloc(0));

/** The secrets of a full handshake without a PSK, from the (EC)DHE shared secret and the ClientHello..ServerHello hash. */
export function handshakeSecrets(sharedSecret: Buffer, helloHash: Buffer) {
  const earlySecret = hkdfExtract(Buffer.alloc(0), Buffer.alloc(HASH_LENGTH));
  const handshakeSecret = hkdfExtract(deriveSecret(earlySecret, 'derived', EMPTY_HASH), sharedSecret);
  return {
    handshakeSecret,
    clientHandshakeTraffic: deriveSecret(handshakeSecret, 'c hs traffic', helloHash),
    serverHandshakeTraffic: deriveSecret(handshakeSecret, 's hs traffic', helloHash),
  };
}

/** The application traffic secrets, from the handshake secret and the ClientHello..server Finished hash. */
export function applicationSecrets(handshakeSecret: Buffer, serverFinishedHash: Buffer) {
  const masterSecret = hkdfExtract(deriveSecret(handshakeSecret, 'derived', EMPTY_HASH), Buffer.alloc(HASH_LENGTH));
  return {
    clientApplicationTraffic: deriveSecret(masterSecret, 'c ap traffic', serverFinishedHash),
    serverApplicationTraffic: deriveSecret(masterSecret, 's ap traffic', serverFinishedHash),
  };
}

/** The AEAD key and IV of a traffic secret (§7.3): 16-byte key for AES-128-GCM, 12-byte IV. */
export const trafficKeys = (secret: Buffer) => ({
  key: hkdfExpandLabel(secret, 'key', Buffer.alloc(0), 16),
  iv: hkdfExpandLabel(secret, 'iv', Buffer.alloc(0), 12),
});

/** The next generation of a traffic secret after a KeyUpdate (§7.2). */
export const nextTrafficSecret = (secret: Buffer): Buffer => hkdfExpandLabel(secret, 'traffic upd', Buffer.alloc(0), HASH_LENGTH);

/** The verify_data of a Finished message (§4.4.4): HMAC(finished_key, transcript hash). */
export const finishedVerifyData = (baseKey: Buffer, transcriptHash: Buffer): Buffer =>
  hmac(hkdfExpandLabel(baseKey, 'finished', Buffer.alloc(0), HASH_LENGTH), transcriptHash);

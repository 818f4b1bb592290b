import { createHash } from 'node:crypto';

/** The one key-management algorithm a sealed join token may use. */
export const ALG = 'ECDH-ES+A256KW';
/** The RFC 3394 §2.2.3.1 default IV of AES key wrap. */
export const KEY_WRAP_IV = Buffer.from('a6a6a6a6a6a6a6a6', 'hex');

function uint32(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value);
  return out;
}

/**
 * The Concat KDF of NIST SP 800-56A as profiled by RFC 7518 §4.6.2 for `ECDH-ES+A256KW`: one SHA-256 round
 * gives the 256-bit key-wrapping key. Hashes counter 1 || Z || AlgorithmID || PartyUInfo || PartyVInfo ||
 * SuppPubInfo, each datum with a 32-bit big-endian length prefix, SuppPubInfo being the key length in bits.
 * Interop with jose is tested both ways (seal.test.ts, agent/seal-token.test.ts).
 */
export function concatKdf(sharedSecret: Buffer, apu: Buffer = Buffer.alloc(0), apv: Buffer = Buffer.alloc(0)): Buffer {
  const algorithmId = Buffer.from(ALG, 'ascii');
  return createHash('sha256')
    .update(uint32(1))
    .update(sharedSecret)
    .update(uint32(algorithmId.length))
    .update(algorithmId)
    .update(uint32(apu.length))
    .update(apu)
    .update(uint32(apv.length))
    .update(apv)
    .update(uint32(256))
    .digest();
}

import { createHash, createHmac } from 'node:crypto';

const u32 = (value: number) => {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value);
  return out;
};

/** A label as the TPM hashes it: its bytes and one terminating zero (Part 1 §11.4.10.4). */
const labelBytes = (label: string) => Buffer.concat([Buffer.from(label, 'latin1'), Buffer.of(0)]);

function truncate(bytes: Buffer, bits: number): Buffer {
  const out = bytes.subarray(0, Math.ceil(bits / 8));
  // A length that is not whole bytes keeps only the low bits of the first byte.
  if (bits % 8 !== 0) out[0]! &= 0xff >> (8 - (bits % 8)); // bits % 8 !== 0, so out has at least one byte
  return out;
}

/**
 * KDFa (Part 1 §11.4.10.2): SP 800-108 counter mode with HMAC, each block HMAC(key, i || label || 0 || contextU ||
 * contextV || bits), all integers u32 big-endian.
 */
export function kdfa(hash: string, key: Buffer, label: string, contextU: Buffer, contextV: Buffer, bits: number): Buffer {
  const blocks: Buffer[] = [];
  let length = 0;
  for (let counter = 1; length * 8 < bits; counter++) {
    const block = createHmac(hash, key)
      .update(u32(counter))
      .update(labelBytes(label))
      .update(contextU)
      .update(contextV)
      .update(u32(bits))
      .digest();
    blocks.push(block);
    length += block.length;
  }
  return truncate(Buffer.concat(blocks), bits);
}

/**
 * KDFe (Part 1 §11.4.10.3): SP 800-56A's concatenation KDF, each block H(i || Z || label || 0 || partyUInfo ||
 * partyVInfo), with the counter u32 big-endian. Turns an ECDH shared x-coordinate into a seed.
 */
export function kdfe(hash: string, z: Buffer, label: string, partyUInfo: Buffer, partyVInfo: Buffer, bits: number): Buffer {
  const blocks: Buffer[] = [];
  let length = 0;
  for (let counter = 1; length * 8 < bits; counter++) {
    const block = createHash(hash).update(u32(counter)).update(z).update(labelBytes(label)).update(partyUInfo).update(partyVInfo).digest();
    blocks.push(block);
    length += block.length;
  }
  return truncate(Buffer.concat(blocks), bits);
}

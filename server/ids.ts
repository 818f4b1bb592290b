import { randomFillSync } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

// Random bytes are drawn from the CSPRNG in blocks and handed out ten at a time: a join takes several ids,
// and one call into OpenSSL per id cost more than the id itself. Every byte is used once.
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;

function randomTen(): Buffer {
  if (poolOffset + 10 > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  poolOffset += 10;
  return pool.subarray(poolOffset - 10, poolOffset);
}

/**
 * A ULID in lower-case Crockford base32 (48 bits of milliseconds, 80 random bits), so ids sort by creation
 * time: `newId('jt')` → `jt_01k5w…`.
 */
export function newId(prefix: string, now = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomTen();
  let random = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      random += CROCKFORD[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return `${prefix}_${time}${random}`;
}

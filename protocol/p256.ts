/**
 * `SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING (0 unused bits) ... }` up to the point: every
 * P-256 SubjectPublicKeyInfo with an uncompressed point starts with these 26 bytes and is 91 bytes long.
 */
export const P256_SPKI_PREFIX = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex');

const P = 2n ** 256n - 2n ** 224n + 2n ** 192n + 2n ** 96n - 1n;
const B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn;

/**
 * Whether `point` (65 bytes, `04 || x || y`) is on P-256: y² = x³ − 3x + b (mod p), with coordinates below p.
 * A few microseconds, against about 100 µs for a full key import, so the hot path can afford it.
 */
export function isP256Point(point: Uint8Array): boolean {
  if (point.length !== 65 || point[0] !== 0x04) return false;
  const bytes = Buffer.from(point.buffer, point.byteOffset, point.byteLength);
  const x = BigInt(`0x${bytes.toString('hex', 1, 33)}`);
  const y = BigInt(`0x${bytes.toString('hex', 33, 65)}`);
  if (x >= P || y >= P) return false;
  return (y * y - (x * x * x - 3n * x + B)) % P === 0n;
}

import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Compares two byte strings of the same expected length (hashes, MACs) in constant time. A length
 * mismatch answers false at once: the lengths of the values compared here are public.
 */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Compares two strings whose length may itself be secret (a presented secret against a stored one) by
 * comparing their SHA-256 digests in constant time, so neither content nor length leaks through timing.
 */
export function constantTimeEqualStrings(a: string, b: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(a), digest(b));
}

// A fixed 32-byte value no token's secret hashes to in practice: what an unknown token id is compared with.
const STAND_IN_SECRET_HASH = createHash('sha256').update('better-compute: no such join token').digest();

/**
 * Whether a presented token secret hash matches the stored one, in constant time. With no stored hash (the
 * token id is unknown) the presented hash is still compared, against a stand-in, and the answer is false:
 * an unknown id and a known id with a wrong secret take the same comparison, so its timing tells nothing.
 */
export function secretHashMatches(stored: Uint8Array | undefined, presented: Uint8Array): boolean {
  const equal = constantTimeEqual(stored ?? STAND_IN_SECRET_HASH, presented);
  return stored !== undefined && equal;
}

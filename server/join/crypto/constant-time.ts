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

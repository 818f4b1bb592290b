import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The bearer form `bcjt_<id>.<secret>`: a `jt_` ULID id and 32 random bytes in unpadded base64url. The
 * last character of 32 bytes in base64url carries 4 bits, so only 16 characters can end a canonical
 * secret: the pattern admits exactly one spelling of each token.
 */
const BEARER = /^bcjt_(jt_[0-9a-hjkmnp-tv-z]{26})\.([A-Za-z0-9_-]{42}[AEIMQUYcgkosw048])$/;

interface ParsedJoinToken {
  id: string;
  secret: string;
}

/** A new secret: 256 random bits, base64url. */
export function newTokenSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** The bearer token for a token id and its secret. */
export function formatJoinToken(id: string, secret: string): string {
  return `bcjt_${id}.${secret}`;
}

/** Splits a bearer token into its id and secret; null for anything not exactly of our form. */
export function parseJoinToken(bearer: string): ParsedJoinToken | null {
  if (typeof bearer !== 'string') return null;
  const match = BEARER.exec(bearer);
  return match ? { id: match[1]!, secret: match[2]! } : null;
}

/** SHA-256 of the secret, the only thing stored: a database dump cannot be replayed as tokens. */
export function hashTokenSecret(secret: string): Buffer<ArrayBuffer> {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** Whether a presented secret matches a stored hash, compared in constant time. */
export function tokenSecretMatches(storedHash: Uint8Array, secret: string): boolean {
  const presented = hashTokenSecret(secret);
  return storedHash.length === presented.length && timingSafeEqual(storedHash, presented);
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

/**
 * Decodes unpadded base64url (RFC 7515 §2) strictly: no padding, no other alphabet, no length that cannot
 * occur, and no non-zero trailing bits, so each byte string has exactly one accepted encoding. Node's own
 * decoder silently skips what it does not understand. Returns null when `text` is not canonical.
 */
export function decodeBase64url(text: string): Buffer | null {
  if (text.length % 4 === 1 || !BASE64URL.test(text)) return null;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : null;
}

/** Encodes bytes as unpadded base64url. */
export function encodeBase64url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
}

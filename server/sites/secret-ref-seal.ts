import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * A discovery token a site agent minted, held server side until that agent redeems its reference: sealed under
 * BETTER_COMPUTE_SECRET with the webhook secrets' construction (server/webhooks/secret.ts: AES-256-GCM under a
 * key HKDF-SHA256 derives from the server secret, random 96-bit IV, 128-bit tag), with its own HKDF label, and
 * the reference's id as additional data, so a sealed token copied onto another reference does not open.
 *
 * Layout: `"BCSR1" (5) | iv (12) | tag (16) | ciphertext`.
 */
const MAGIC = Buffer.from('BCSR1', 'latin1');
const IV_BYTES = 12;
const TAG_BYTES = 16;

const keys = new Map<string, Buffer>();
function keyOf(serverSecret: string): Buffer {
  let key = keys.get(serverSecret);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', Buffer.from(serverSecret, 'utf8'), Buffer.alloc(0), 'better-compute secret reference v1', 32));
    keys.set(serverSecret, key);
  }
  return key;
}

export function sealSecretRef(token: string, refId: string, serverSecret: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyOf(serverSecret), iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(refId, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(token, 'utf8'), cipher.final()]);
  return Buffer.concat([MAGIC, iv, cipher.getAuthTag(), ciphertext]);
}

/** Opens a sealed token with the first of `secrets` that does; null when none does (never the bytes in an error). */
export function openSecretRef(sealed: Uint8Array, refId: string, secrets: readonly string[]): string | null {
  const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  if (bytes.length <= MAGIC.length + IV_BYTES + TAG_BYTES || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  const iv = bytes.subarray(MAGIC.length, MAGIC.length + IV_BYTES);
  const tag = bytes.subarray(MAGIC.length + IV_BYTES, MAGIC.length + IV_BYTES + TAG_BYTES);
  const ciphertext = bytes.subarray(MAGIC.length + IV_BYTES + TAG_BYTES);
  for (const serverSecret of secrets) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', keyOf(serverSecret), iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(refId, 'utf8'));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
    } catch {
      // the next secret, if any
    }
  }
  return null;
}

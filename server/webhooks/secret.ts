import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { DomainError } from '../../protocol/errors';

/**
 * Webhook signing secrets, in the Standard Webhooks format `whsec_<base64 of 32 random bytes>`. The server
 * must sign with them, so they cannot be stored as hashes: they are sealed under BETTER_COMPUTE_SECRET with
 * the PKI bundle's cipher (AES-256-GCM, random 96-bit IV, 128-bit tag). The PKI seal's scrypt (128 MiB, a
 * fraction of a second per open) would cost every delivery that much, so the key is derived once per process
 * with HKDF-SHA256: BETTER_COMPUTE_SECRET already carries at least 128 bits of entropy (secret-strength.ts),
 * which is what a password-hardening KDF would otherwise have to make up for. The subscription's id is the
 * additional data, so a sealed secret copied onto another subscription does not open.
 *
 * Layout: `"BCWH1" (5) | iv (12) | tag (16) | ciphertext`.
 */
const MAGIC = Buffer.from('BCWH1', 'latin1');
const IV_BYTES = 12;
const TAG_BYTES = 16;
const SECRET_BYTES = 32;
const PREFIX = 'whsec_';

const keys = new Map<string, Buffer>();
function keyOf(serverSecret: string): Buffer {
  let key = keys.get(serverSecret);
  if (!key) {
    key = Buffer.from(
      hkdfSync('sha256', Buffer.from(serverSecret, 'utf8'), Buffer.alloc(0), 'better-compute webhook signing secret v1', 32),
    );
    keys.set(serverSecret, key);
  }
  return key;
}

/** The server secrets that may open a sealed webhook secret: the current one, then the previous one. */
export function serverSecrets(env: Record<string, string | undefined> = process.env): string[] {
  const secrets = [env.BETTER_COMPUTE_SECRET, env.BETTER_COMPUTE_PREVIOUS_SECRET].filter((s): s is string => !!s);
  if (!secrets.length) throw new DomainError('INVALID_CONFIG', 'BETTER_COMPUTE_SECRET is not set: webhook secrets cannot be sealed');
  return secrets;
}

/** A new signing secret, `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** The bytes an HMAC is keyed with: the base64 after `whsec_`, as the Standard Webhooks libraries read it. */
function webhookSecretBytes(secret: string): Buffer {
  if (!secret.startsWith(PREFIX)) throw new DomainError('INVALID_ARGUMENT', 'a webhook secret starts with whsec_');
  return Buffer.from(secret.slice(PREFIX.length), 'base64');
}

export function sealWebhookSecret(secret: string, subscriptionId: string, serverSecret: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyOf(serverSecret), iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(subscriptionId, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return Buffer.concat([MAGIC, iv, cipher.getAuthTag(), ciphertext]);
}

/**
 * Opens a sealed secret with the first of `secrets` that does.
 *
 * @throws DomainError INVALID_CONFIG when none does (BETTER_COMPUTE_SECRET changed without
 *   BETTER_COMPUTE_PREVIOUS_SECRET) or the bytes are not a sealed webhook secret.
 */
export function openWebhookSecret(sealed: Uint8Array, subscriptionId: string, secrets: string[]): string {
  const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  if (bytes.length <= MAGIC.length + IV_BYTES + TAG_BYTES || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new DomainError('INVALID_CONFIG', 'a stored webhook secret is malformed');
  }
  const iv = bytes.subarray(MAGIC.length, MAGIC.length + IV_BYTES);
  const tag = bytes.subarray(MAGIC.length + IV_BYTES, MAGIC.length + IV_BYTES + TAG_BYTES);
  const ciphertext = bytes.subarray(MAGIC.length + IV_BYTES + TAG_BYTES);
  for (const serverSecret of secrets) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', keyOf(serverSecret), iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(subscriptionId, 'utf8'));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
    } catch {
      // the next secret, if any
    }
  }
  throw new DomainError(
    'INVALID_CONFIG',
    'BETTER_COMPUTE_SECRET does not open a stored webhook secret (rotated without BETTER_COMPUTE_PREVIOUS_SECRET?)',
  );
}

/**
 * The Standard Webhooks signature header value: `v1,` + base64(HMAC-SHA256(secret bytes, `${id}.${timestamp}.${body}`)),
 * `timestamp` in unix seconds.
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', webhookSecretBytes(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** True when one of the space-separated `v1,` signatures of `header` matches (constant-time per candidate). */
export function webhookSignatureMatches(secret: string, id: string, timestamp: number, body: string, header: string): boolean {
  const expected = Buffer.from(signWebhook(secret, id, timestamp, body));
  return header.split(' ').some((candidate) => {
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

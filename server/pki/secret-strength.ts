/**
 * The rule for `BETTER_COMPUTE_SECRET`, the secret every CA key is sealed under. A sealed bundle that leaks (a
 * database dump, a backup) can be attacked offline, so the secret must carry at least 128 bits of entropy
 * whatever the key derivation costs. Length is what can be checked: 43 characters is 32 random bytes in
 * base64url (`openssl rand -base64 32` prints 44 with padding, `-hex 32` 64), comfortably past 128 bits even
 * for a secret a human typed; a floor on distinct characters turns away the padded and repeated ones.
 */
export const MIN_SECRET_LENGTH = 43;
const MIN_DISTINCT_CHARACTERS = 10;

/** How the README, the errors and the CLI tell an operator to make a secret. */
export const SECRET_HOW_TO = 'generate one with `openssl rand -base64 32`';

/** Why `secret` is too weak to seal the PKI under, or null when it passes. Never includes the secret. */
export function secretWeakness(secret: string): string | null {
  if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) {
    return `must be at least ${MIN_SECRET_LENGTH} characters of random text (128 bits or more); ${SECRET_HOW_TO}`;
  }
  if (new Set(secret).size < MIN_DISTINCT_CHARACTERS) {
    return `repeats too few characters to be random (at least ${MIN_DISTINCT_CHARACTERS} different ones are expected); ${SECRET_HOW_TO}`;
  }
  return null;
}

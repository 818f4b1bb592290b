/**
 * The rule for `BETTER_COMPUTE_SECRET`, the secret every CA key is sealed under. A sealed bundle that leaks (a
 * database dump, a backup) can be attacked offline, so the secret must carry at least 128 bits of entropy
 * whatever the key derivation costs. 43 characters is 32 random bytes in base64url (`openssl rand -base64 32`
 * prints 44 with padding, `-hex 32` 64). Length and distinct characters alone let `0123456789` five times or
 * `password` repeated with `123` through, so the secret must also pass an entropy estimate
 * ({@link estimateSecretBits}) that charges repeats, runs and a small alphabet for what they are worth.
 */
export const MIN_SECRET_LENGTH = 43;
const MIN_DISTINCT_CHARACTERS = 10;
/** The estimate a secret must reach. A random 43-character base64url string estimates at about 200 bits. */
export const MIN_SECRET_BITS = 128;

/** How the operator guide, the errors and the CLI tell an operator to make a secret. */
export const SECRET_HOW_TO = 'generate one with `openssl rand -base64 32`';

// A repeat shorter than this is left to the literal cost: random text has two-character repeats by chance.
const MIN_REPEAT = 3;
const MIN_RUN = 3;

/**
 * A conservative estimate, in bits, of how hard `secret` is to guess: a left-to-right parse (like zxcvbn's,
 * without dictionaries) into
 * - repeats of earlier text (LZ77: the longest earlier match of at least 3 characters, overlaps allowed, so a
 *   periodic string costs one period), charged as its distance and length;
 * - runs of at least 3 characters whose code points step by the same +1 or -1 (`0123456789`, `zyxw`), charged
 *   as the start, the direction and the length;
 * - any other character, charged log2 of the number of distinct characters the secret uses: an attacker who
 *   sees the alphabet (hex, digits only, two letters) searches only that.
 * Random text rarely repeats or runs, so `openssl rand -base64 32` estimates near length times log2(alphabet).
 */
export function estimateSecretBits(secret: string): number {
  const chars = [...secret];
  const literal = Math.log2(Math.max(2, new Set(chars).size));
  let bits = 0;
  for (let i = 0; i < chars.length;) {
    const repeat = longestEarlierMatch(chars, i);
    const run = runLength(chars, i);
    if (repeat.length >= MIN_REPEAT && repeat.length >= run) {
      bits += Math.log2(i) + Math.log2(repeat.length);
      i += repeat.length;
    } else if (run >= MIN_RUN) {
      bits += literal + 1 + Math.log2(run);
      i += run;
    } else {
      bits += literal;
      i += 1;
    }
  }
  return bits;
}

function longestEarlierMatch(chars: string[], at: number): { length: number } {
  let best = 0;
  for (let start = 0; start < at; start++) {
    let length = 0;
    while (at + length < chars.length && chars[start + length] === chars[at + length]) length++;
    if (length > best) best = length;
  }
  return { length: best };
}

function runLength(chars: string[], at: number): number {
  if (at + 1 >= chars.length) return 1;
  const step = chars[at + 1]!.codePointAt(0)! - chars[at]!.codePointAt(0)!;
  if (step !== 1 && step !== -1) return 1;
  let length = 2;
  while (at + length < chars.length && chars[at + length]!.codePointAt(0)! - chars[at + length - 1]!.codePointAt(0)! === step) length++;
  return length;
}

/** Why `secret` is too weak to seal the PKI under, or null when it passes. Never includes the secret. */
export function secretWeakness(secret: string): string | null {
  if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) {
    return `must be at least ${MIN_SECRET_LENGTH} characters of random text (128 bits or more); ${SECRET_HOW_TO}`;
  }
  if (new Set(secret).size < MIN_DISTINCT_CHARACTERS) {
    return `repeats too few characters to be random (at least ${MIN_DISTINCT_CHARACTERS} different ones are expected); ${SECRET_HOW_TO}`;
  }
  const bits = estimateSecretBits(secret);
  if (bits < MIN_SECRET_BITS) {
    return `is too predictable to be random (repeats, runs like 0123 or a small alphabet: about ${Math.floor(bits)} bits, at least ${MIN_SECRET_BITS} are needed); ${SECRET_HOW_TO}`;
  }
  return null;
}

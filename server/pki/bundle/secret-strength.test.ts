import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { estimateSecretBits, MIN_SECRET_BITS, secretWeakness } from './secret-strength';

describe('the PKI secret rule', () => {
  it.each([
    ['digits five times over', '0123456789'.repeat(5)],
    ['a word repeated, then 123', `${'password'.repeat(5)}123`],
    ['a run of the alphabet and digits', 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'],
    ['a phrase typed twice', 'my-secret-pass-2024!my-secret-pass-2024!my-secret-pass-2024!'],
    ['a test secret built from runs', 'cli-test-secret-0123456789abcdef-ghijklmnopqrst'],
    [
      'a random string over a two-letter alphabet plus a tail',
      `${[...randomBytes(48)].map((b) => (b & 1 ? 'x' : 'y')).join('')}0123456789`,
    ],
  ])('refuses %s as predictable, without repeating it', (_name, secret) => {
    expect(secret.length).toBeGreaterThanOrEqual(43);
    expect(new Set(secret).size).toBeGreaterThanOrEqual(10); // the length and distinct-character rules let these through
    const weakness = secretWeakness(secret);
    expect(weakness).toMatch(/^is too predictable to be random .* at least 128 are needed\); generate one with `openssl rand -base64 32`$/);
    expect(weakness).not.toContain(secret);
  });

  it('never refuses random secrets: 20,000 each of openssl rand -base64 32, -hex 32 and 43 base64url characters', () => {
    let lowest = Infinity;
    for (const encoding of ['base64', 'hex', 'base64url'] as const) {
      for (let i = 0; i < 20_000; i++) {
        const secret = randomBytes(32).toString(encoding);
        expect(secretWeakness(secret)).toBeNull();
        lowest = Math.min(lowest, estimateSecretBits(secret));
      }
    }
    // The margin: random text sits far above the floor, so a false refusal is not a matter of luck.
    expect(lowest).toBeGreaterThan(MIN_SECRET_BITS * 1.3);
  });
});

import { describe, expect, it } from 'vitest';
import { decodeBase64url, encodeBase64url } from './base64url';

describe('decodeBase64url', () => {
  it('round-trips every length', () => {
    for (let length = 0; length < 40; length++) {
      const bytes = Buffer.from(Array.from({ length }, (_, i) => (i * 37 + 11) & 0xff));
      expect(decodeBase64url(encodeBase64url(bytes))?.equals(bytes)).toBe(true);
    }
  });

  it('accepts only the one canonical encoding', () => {
    expect(decodeBase64url('AQ==')).toBeNull(); // padding
    expect(decodeBase64url('A+8')).toBeNull(); // standard alphabet
    expect(decodeBase64url('AQ B')).toBeNull();
    expect(decodeBase64url('AQE')).not.toBeNull();
    expect(decodeBase64url('AR')).toBeNull(); // non-zero trailing bits: 'AQ' is the canonical form of 0x01
    expect(decodeBase64url('AQEBA')).toBeNull(); // impossible length
  });
});

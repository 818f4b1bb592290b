import { describe, expect, it } from 'vitest';
import { constantTimeEqual, constantTimeEqualStrings } from './constant-time';

describe('constant-time helpers', () => {
  it('compares in constant time', () => {
    expect(constantTimeEqual(Buffer.from('abc'), Buffer.from('abc'))).toBe(true);
    expect(constantTimeEqual(Buffer.from('abc'), Buffer.from('abd'))).toBe(false);
    expect(constantTimeEqual(Buffer.from('abc'), Buffer.from('ab'))).toBe(false);
    expect(constantTimeEqualStrings('secret', 'secret')).toBe(true);
    expect(constantTimeEqualStrings('secret', 'secret2')).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { newId } from './ids';

describe('newId', () => {
  it('sorts by time and never repeats across pool refills', () => {
    const ids = Array.from({ length: 2000 }, () => newId('node', 1_700_000_000_000));
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => /^node_[0-9a-hjkmnp-tv-z]{26}$/.test(id))).toBe(true);
    expect(newId('jt', 1) < newId('jt', 2)).toBe(true);
    // 2000 ids draw 20,000 random bytes: several blocks, and the random parts differ everywhere.
    const randomParts = new Set(ids.map((id) => id.slice(-16)));
    expect(randomParts.size).toBe(ids.length);
  });
});

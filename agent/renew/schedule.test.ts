import { describe, expect, it } from 'vitest';
import { backoffMs, renewalDelayMs } from './schedule';

describe('renewal schedule', () => {
  it('renews between 55% and 65% of the lifetime', () => {
    const from = new Date('2026-12-01T00:00:00Z');
    const to = new Date('2026-12-02T00:00:00Z');
    expect(renewalDelayMs(from, to, from.getTime(), () => 0)).toBeCloseTo(0.55 * 86_400_000, 0);
    expect(renewalDelayMs(from, to, from.getTime(), () => 1)).toBeCloseTo(0.65 * 86_400_000, 0);
    expect(renewalDelayMs(from, to, to.getTime(), () => 0.5)).toBe(0);
  });

  it('backs off exponentially with jitter, capped', () => {
    expect(backoffMs(0, 300_000, () => 1)).toBe(1000);
    expect(backoffMs(3, 300_000, () => 1)).toBe(8000);
    expect(backoffMs(3, 300_000, () => 0)).toBe(4000);
    expect(backoffMs(30, 300_000, () => 1)).toBe(300_000);
  });
});

import { describe, expect, it } from 'vitest';
import { reconnectDelayMs, RECONNECT_CAP_MS } from './loop';

describe('reconnectDelayMs', () => {
  it('is full jitter under a doubling step, capped, so a fleet dropped at once comes back spread out', () => {
    expect(reconnectDelayMs(0, RECONNECT_CAP_MS, () => 0.999)).toBe(999);
    expect(reconnectDelayMs(3, RECONNECT_CAP_MS, () => 0.5)).toBe(4_000);
    expect(reconnectDelayMs(30, RECONNECT_CAP_MS, () => 0.999)).toBeLessThan(RECONNECT_CAP_MS);
    expect(reconnectDelayMs(30, RECONNECT_CAP_MS, () => 0)).toBe(0);
    // 10,000 agents whose sessions ended together: their first retries spread over the whole first second.
    const first = Array.from({ length: 10_000 }, () => reconnectDelayMs(0));
    const perTenth = Array.from({ length: 10 }, (_, i) => first.filter((ms) => ms >= i * 100 && ms < (i + 1) * 100).length);
    for (const n of perTenth) expect(n).toBeGreaterThan(800);
    expect(Math.max(...first)).toBeLessThan(1_000);
  });
});

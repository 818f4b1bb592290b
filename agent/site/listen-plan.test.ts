import { describe, expect, it } from 'vitest';
import { UsageError } from '../bcd/join-setup';
import { isLoopbackListener, listenPlan } from './listen-plan';

describe('bcd site listeners', () => {
  it('defaults to one loopback listener for leases and tokens', () => {
    expect(listenPlan(undefined, undefined)).toEqual({ lease: '127.0.0.1:8470', boot: '127.0.0.1:8470' });
    expect(listenPlan('[::1]:8470', undefined)).toEqual({ lease: '[::1]:8470', boot: '[::1]:8470' });
  });

  it('keeps leases off a socket the ramdisks reach', () => {
    for (const lease of ['0.0.0.0:8470', '10.20.0.5:8470', ':8470', '[::]:8470', '[fe80::1]:8470']) {
      expect(() => listenPlan(lease, undefined)).toThrow(UsageError);
      expect(() => listenPlan(lease, lease)).toThrow(/--boot-listen/);
    }
    expect(listenPlan('10.20.0.4:8470', '10.20.0.5:8471')).toEqual({ lease: '10.20.0.4:8470', boot: '10.20.0.5:8471' });
    expect(listenPlan('127.0.0.1:8470', '10.20.0.5:8471')).toEqual({ lease: '127.0.0.1:8470', boot: '10.20.0.5:8471' });
  });

  it('tells loopback from other addresses', () => {
    expect(['127.0.0.1:1', '127.1.2.3:1', 'localhost:1', '[::1]:1'].map(isLoopbackListener)).toEqual([true, true, true, true]);
    expect(['0.0.0.0:1', ':1', '[::]:1', '10.0.0.1:1', '[::ffff:127.0.0.1]:1'].map(isLoopbackListener)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});

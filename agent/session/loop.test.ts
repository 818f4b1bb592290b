import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { NodeLoadedIdentity } from '../renew/identity';
import { reconnectDelayMs, RECONNECT_CAP_MS, runSessionLoop } from './loop';
import type { AgentSession } from './session-client';

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

describe('runSessionLoop reconnecting', () => {
  afterEach(() => vi.restoreAllMocks());

  it('leaves no timer or abort listener behind per reconnect (the wait until the renewal is called off)', async () => {
    // Sessions that end at once, reconnected without delay (Math.random 0): twenty reconnects in a row.
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const controller = new AbortController();
    const identity = { notBefore: new Date(Date.now() - 60_000), notAfter: new Date(Date.now() + 86_400_000), spiffeId: 'spiffe://t/node' };
    let opened = 0;
    let listenersAtLastOpen = -1;
    let twenty = () => {};
    const reachedTwenty = new Promise<void>((resolve) => (twenty = resolve));
    const fakeSession = (): AgentSession => {
      const now = new Date();
      return {
        welcome: { status: 'welcome', nodeId: 'node_test', sessionId: `sess_${opened}`, serverTime: 0, heartbeatSeconds: 30 },
        since: now,
        lastHeartbeat: now,
        certificateNotAfter: identity.notAfter,
        ended: new Promise<void>((resolve) => setImmediate(resolve)),
        post: () => Promise.reject(new Error('not used')),
        close: () => {},
      };
    };
    const exit = runSessionLoop({
      identityDir: '(memory)',
      gatewayUrl: 'https://127.0.0.1:9',
      servingCaPin: 'sha256/AAAA',
      agentVersion: 'test',
      signal: controller.signal,
      log: () => {},
      startJitterMs: 0,
      renewalDelay: () => 86_400_000 / 2,
      store: { load: async () => identity as unknown as NodeLoadedIdentity, replace: async () => {} },
      openSession: async () => {
        opened += 1;
        listenersAtLastOpen = getEventListeners(controller.signal, 'abort').length;
        if (opened === 20) twenty();
        return fakeSession();
      },
    });
    await reachedTwenty;
    controller.abort();
    expect(await exit).toBe(0);
    expect(opened).toBeGreaterThanOrEqual(20);
    // Before the twentieth Hello, nineteen sessions had ended: none of their waits is still listening.
    expect(listenersAtLastOpen).toBeLessThanOrEqual(1);
  });
});

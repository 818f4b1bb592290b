import { describe, expect, it } from 'vitest';
import type { ServerResponse } from 'node:http';
import { MAX_HELLOS_IN_FLIGHT, MAX_HELLOS_WAITING, SessionHub } from './session-hub';
import { SESSION_REFUSED, SESSION_UNAVAILABLE } from '../../protocol/session-wire';

/** A response that records what was written: enough for a refused Hello. */
function response() {
  const written: { status?: number; body?: Buffer } = {};
  const res = {
    destroyed: false,
    writeHead(status: number) {
      written.status = status;
      return res;
    },
    end(body?: Buffer) {
      written.body = body;
      return res;
    },
  };
  return { res: res as unknown as ServerResponse, written };
}

describe('SessionHub', () => {
  it(`relays at most ${MAX_HELLOS_IN_FLIGHT} Hellos to the API at once; the rest wait, and every one is answered`, async () => {
    let inFlight = 0;
    let most = 0;
    const hub = new SessionHub(async (pathname) => {
      if (pathname.endsWith('/lease'))
        return { status: 200, body: Buffer.from(JSON.stringify({ live: true, end: [], refreshMs: 60_000 })) };
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight--;
      return SESSION_REFUSED;
    }, '/api/compute');
    const calls = Array.from({ length: 100 }, () => response());
    await Promise.all(calls.map(({ res }) => hub.hello(res, null, Buffer.from('{}'), null)));
    hub.stop();
    expect(most).toBe(MAX_HELLOS_IN_FLIGHT);
    for (const { written } of calls) expect(written).toEqual({ status: 403, body: SESSION_REFUSED.body });
  });

  it(`answers the retryable 503 at once when ${MAX_HELLOS_WAITING} Hellos already wait, and relays the rest`, async () => {
    const release: Array<() => void> = [];
    let relayed = 0;
    const hub = new SessionHub(async (pathname) => {
      if (pathname.endsWith('/lease'))
        return { status: 200, body: Buffer.from(JSON.stringify({ live: true, end: [], refreshMs: 60_000 })) };
      relayed++;
      await new Promise<void>((resolve) => release.push(resolve));
      return SESSION_REFUSED;
    }, '/api/compute');
    const held = MAX_HELLOS_IN_FLIGHT + MAX_HELLOS_WAITING;
    const calls = Array.from({ length: held + 5 }, () => response());
    const answered = calls.map(({ res }) => hub.hello(res, null, Buffer.from('{}'), null));
    // The five past the queue are answered without waiting for the API.
    await Promise.all(answered.slice(held));
    for (const { written } of calls.slice(held)) expect(written).toEqual({ status: 503, body: SESSION_UNAVAILABLE.body });
    expect(hub.stats.hellosShed).toBe(5);
    expect(relayed).toBe(MAX_HELLOS_IN_FLIGHT);
    // The held ones are all relayed in turn and answered with the API's answer.
    while (release.length) {
      release.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(answered.slice(0, held));
    hub.stop();
    expect(relayed).toBe(held);
    for (const { written } of calls.slice(0, held)) expect(written).toEqual({ status: 403, body: SESSION_REFUSED.body });
  });
});

import { describe, expect, it } from 'vitest';
import type { ServerResponse } from 'node:http';
import { MAX_HELLOS_IN_FLIGHT, SessionHub } from './session-hub';
import { SESSION_REFUSED } from '../../protocol/session-wire';

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
});

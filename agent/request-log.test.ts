import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { agentLogLevel, logAgentRequest, loggedFetch, REQUEST_ID_HEADER, setAgentLogDefault } from './request-log';

// The agent's request lines, written through process.stderr: their fields, the id sent as x-request-id, what
// they never hold, and which level writes them.

let written: string[];
const saved = process.env.BETTER_COMPUTE_LOG_LEVEL;
beforeEach(() => {
  written = [];
  delete process.env.BETTER_COMPUTE_LOG_LEVEL;
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
});
afterEach(() => {
  vi.restoreAllMocks();
  setAgentLogDefault('warn');
  if (saved === undefined) delete process.env.BETTER_COMPUTE_LOG_LEVEL;
  else process.env.BETTER_COMPUTE_LOG_LEVEL = saved;
});
const lines = () => written.map((w) => JSON.parse(w) as Record<string, unknown>);

const TOKEN = 'bcjt_01abcdefghij.c2VjcmV0LXNlY3JldC1zZWNyZXQ';
const KEY = '-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----';

describe('loggedFetch', () => {
  it('sends a request id as x-request-id and writes one line with it: method, path, status, latency; never a header or body', async () => {
    setAgentLogDefault('info');
    const seen: Array<Record<string, string>> = [];
    const inner = (async (_input: string | URL | Request, init?: RequestInit) => {
      seen.push(init!.headers as Record<string, string>);
      return new Response('{"status":"joined"}', { status: 200 });
    }) as typeof fetch;
    const response = await loggedFetch(inner)(`https://gw.example:8443/api/compute/v1/join?token=${TOKEN}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ sealedToken: TOKEN, key: KEY }),
    });
    expect(response.status).toBe(200);
    // The caller's headers pass as a plain record (the pinned fetch spreads it), with the id added.
    expect(seen).toEqual([
      {
        'content-type': 'application/json',
        authorization: `Bearer ${TOKEN}`,
        [REQUEST_ID_HEADER]: expect.stringMatching(/^req_[A-Za-z0-9_-]{16}$/),
      },
    ]);
    expect(lines()).toEqual([
      {
        level: 'info',
        time: expect.any(String),
        message: 'agent request',
        requestId: seen[0]![REQUEST_ID_HEADER],
        method: 'POST',
        path: '/api/compute/v1/join',
        status: 200,
        ms: expect.any(Number),
      },
    ]);
    expect(written.join('')).not.toContain('bcjt_');
    expect(written.join('')).not.toContain('PRIVATE KEY');
    expect(written.join('')).not.toContain('content-type');
  });

  it('a new id per request; a failure writes a warn line with status null and is rethrown', async () => {
    setAgentLogDefault('info');
    let calls = 0;
    const inner = (async () => {
      if (++calls === 2) throw new TypeError('fetch failed');
      return new Response('', { status: 503 });
    }) as typeof fetch;
    const doFetch = loggedFetch(inner);
    await doFetch('https://gw.example/api/compute/.well-known/better-compute');
    await expect(doFetch('https://gw.example/api/compute/.well-known/better-compute')).rejects.toThrow('fetch failed');
    const [first, second] = lines();
    expect(first).toMatchObject({ level: 'warn', method: 'GET', path: '/api/compute/.well-known/better-compute', status: 503 });
    expect(second).toMatchObject({ level: 'warn', status: null });
    expect(first!.requestId).not.toBe(second!.requestId);
  });
});

describe('the level', () => {
  const line = (status: number | null) =>
    logAgentRequest({ requestId: 'req_x', method: 'POST', path: '/api/compute/v1/renew', status, startedAt: performance.now() });

  it("is the entry point's default (warn unless it says info): at warn only 5xx and failures are written", () => {
    expect(agentLogLevel()).toBe('warn');
    line(200);
    line(403);
    line(502);
    line(null);
    expect(lines().map((l) => [l.level, l.status])).toEqual([
      ['warn', 502],
      ['warn', null],
    ]);
    written = [];
    setAgentLogDefault('info');
    line(200);
    expect(lines().map((l) => [l.level, l.status])).toEqual([['info', 200]]);
  });

  it('BETTER_COMPUTE_LOG_LEVEL overrides the default either way; silent writes nothing; an unknown value keeps the default', () => {
    setAgentLogDefault('info');
    process.env.BETTER_COMPUTE_LOG_LEVEL = 'WARN';
    line(200);
    expect(written).toEqual([]);
    setAgentLogDefault('warn');
    process.env.BETTER_COMPUTE_LOG_LEVEL = 'debug';
    line(200);
    expect(lines()).toHaveLength(1);
    process.env.BETTER_COMPUTE_LOG_LEVEL = 'silent';
    line(null);
    expect(lines()).toHaveLength(1);
    process.env.BETTER_COMPUTE_LOG_LEVEL = 'loud';
    expect(agentLogLevel()).toBe('warn');
  });
});

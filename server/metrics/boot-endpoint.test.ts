import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { testDatabaseUrl, testDb } from '../../test/db';
import { captureStderr, createTestTenant } from '../../test/fixtures';
import { createApiContext } from '../api/context';
import { createApiKey } from '../api-keys/api-keys';
import { checkStartupConfig } from '../boot/startup-config';
import { createBootServer, type NodeHandler } from '../boot/http-server';
import { createServices } from '../boot/services';

// The production boot server (server/boot/http-server.ts) in process: GET /metrics without configuration,
// and the request log line. "Next" here builds the API context from the request's headers, as the REST and
// tRPC routes do, so the principal in the log line comes from the real authentication path.

let port: number;
let server: http.Server;
let apiKey: string;
let apiKeyId: string;

beforeAll(async () => {
  process.env.DATABASE_URL = testDatabaseUrl();
  const t = await createTestTenant(testDb());
  const created = await createApiKey(testDb(), t.admin, { tenantId: t.tenantId, role: 'viewer', name: 'metrics-log' });
  apiKey = created.key;
  apiKeyId = created.id;
  const next: NodeHandler = async (req, res) => {
    const ctx = await createApiContext(testDb(), new Headers(req.headers as Record<string, string>), async () => null);
    res.writeHead(ctx.principal ? 200 : 401, { 'content-type': 'application/json' }).end('{}');
  };
  server = createBootServer(createServices({ databaseUrl: testDatabaseUrl() }), () => next);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

afterEach(() => {
  delete process.env.BETTER_COMPUTE_METRICS_TOKEN;
  delete process.env.BETTER_COMPUTE_LOG_LEVEL;
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(`http://127.0.0.1:${port}${path}`, { headers });

/** Request lines are written when the response closes; give the event loop a turn. */
const settle = () => new Promise((r) => setTimeout(r, 50));

/** The request log lines among what was written to stderr, parsed. */
const requestLines = (written: string[]) =>
  written
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((l) => l.message === 'request');

describe('GET /metrics without BETTER_COMPUTE_METRICS_TOKEN', () => {
  it('does not exist: 404 in the error model, whatever the bearer', async () => {
    for (const headers of [{}, { authorization: 'Bearer anything-at-all-here' }] as Record<string, string>[]) {
      const answer = await get('/metrics', headers);
      expect(answer.status).toBe(404);
      expect(await answer.json()).toEqual({ code: 'NOT_FOUND', message: 'Not found' });
    }
  });

  it('answers once the token is configured (read per request), and only to its bearer', async () => {
    process.env.BETTER_COMPUTE_METRICS_TOKEN = 'a-scrape-token-of-enough-length';
    expect((await get('/metrics')).status).toBe(401);
    const answer = await get('/metrics', { authorization: 'Bearer a-scrape-token-of-enough-length' });
    expect(answer.status).toBe(200);
    expect(await answer.text()).toContain('# TYPE better_compute_joins_total counter');
  });
});

describe('the request log', () => {
  it('writes one JSON line per request with its id (also the x-request-id header), method, route, status, latency and principal', async () => {
    const stderr = captureStderr();
    try {
      const withKey = await get('/api/compute/v1/tenants?secret=query-text', { authorization: `Bearer ${apiKey}` });
      const anonymous = await get('/pools');
      await settle();
      const lines = requestLines(stderr.lines);
      const idOf = (r: Response) => r.headers.get('x-request-id')!;
      expect(idOf(withKey)).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
      expect(lines.find((l) => l.requestId === idOf(withKey))).toEqual({
        level: 'info',
        time: expect.any(String),
        message: 'request',
        requestId: idOf(withKey),
        method: 'GET',
        route: '/api/compute/v1/tenants',
        status: 200,
        ms: expect.any(Number),
        principal: `api-key:${apiKeyId}`,
      });
      expect(lines.find((l) => l.requestId === idOf(anonymous))).toMatchObject({ route: '/pools', status: 401, principal: null });
      expect(lines).toHaveLength(2);
      // Never the credential, nor the query string.
      expect(stderr.lines.join('')).not.toContain(apiKey);
      expect(stderr.lines.join('')).not.toContain('query-text');
    } finally {
      stderr.stop();
    }
  });

  it('logs the agent endpoints too, but their answers carry no id header (protocol.md fixes their headers)', async () => {
    const stderr = captureStderr();
    try {
      const answer = await fetch(`http://127.0.0.1:${port}/api/compute/v1/join`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      await answer.arrayBuffer();
      await settle();
      expect(answer.headers.get('x-request-id')).toBeNull();
      const lines = requestLines(stderr.lines);
      expect(lines).toEqual([
        expect.objectContaining({
          requestId: expect.stringMatching(/^req_/),
          method: 'POST',
          route: '/api/compute/v1/join',
          status: answer.status,
          principal: null,
        }),
      ]);
    } finally {
      stderr.stop();
    }
  });

  it('keeps a well-formed incoming request id (the gateway passes its own) and replaces any other', async () => {
    expect((await get('/pools', { 'x-request-id': 'req_fromthegateway01' })).headers.get('x-request-id')).toBe('req_fromthegateway01');
    expect((await get('/pools', { 'x-request-id': 'bad id with spaces' })).headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('is silent below BETTER_COMPUTE_LOG_LEVEL', async () => {
    process.env.BETTER_COMPUTE_LOG_LEVEL = 'warn';
    const stderr = captureStderr();
    try {
      await get('/pools');
      await settle();
      expect(stderr.lines.join('')).not.toContain('"message":"request"');
    } finally {
      stderr.stop();
    }
  });
});

describe('the start refuses bad observability settings', () => {
  it('a short metrics token and an unknown log level', () => {
    expect(() => checkStartupConfig({ BETTER_COMPUTE_METRICS_TOKEN: 'short' })).toThrow(
      /BETTER_COMPUTE_METRICS_TOKEN must be at least 16 characters/,
    );
    expect(() => checkStartupConfig({ BETTER_COMPUTE_LOG_LEVEL: 'verbose' })).toThrow(
      /BETTER_COMPUTE_LOG_LEVEL must be one of debug, info, warn, error, silent/,
    );
    expect(() => checkStartupConfig({ BETTER_COMPUTE_METRICS_TOKEN: 'x'.repeat(32), BETTER_COMPUTE_LOG_LEVEL: 'ERROR' })).not.toThrow();
  });
});

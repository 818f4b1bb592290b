import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { testDatabaseUrl } from '../../test/db';
import { createServices } from './services';
import { HTTP_TIMEOUTS, createBootServer, normalizedPath, type HttpTimeouts, type NodeHandler } from './http-server';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

// The agent endpoints' services on the test database, which has no PKI: a join answers 503 INVALID_CONFIG, not a 500.
let services: ReturnType<typeof createServices>;
beforeAll(() => {
  services = createServices({ databaseUrl: testDatabaseUrl() });
});
afterAll(() => services.close());

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A boot server whose "Next" records the paths it was asked for and answers 404 text. */
async function start(timeouts: HttpTimeouts = HTTP_TIMEOUTS) {
  const seenByNext: string[] = [];
  const next: NodeHandler = async (req, res) => {
    seenByNext.push(req.url ?? '');
    res.writeHead(404, { 'content-type': 'text/plain' }).end('next');
  };
  const server = createBootServer(services, () => next, timeouts);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, seenByNext };
}

/** A raw request: the path goes on the wire exactly as written (no client-side normalisation). */
function send(port: number, method: string, path: string, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {},
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const withoutDate = ({ date: _date, ...rest }: Answer['headers']) => rest;

describe('the boot server', () => {
  it('sends every path that resolves to the join to the fast path, answering identical bytes and headers', async () => {
    const { port, seenByNext } = await start();
    const paths = [
      '/api/compute/v1/join',
      '/api/compute/v1/./join',
      '/api/compute/v1/../v1/join',
      '/api/compute/v1/%2e/join',
      '/api/compute/./v1/join?x=1',
    ];
    const answers = [];
    for (const path of paths) answers.push(await send(port, 'POST', path, 'not a seal'));
    expect(seenByNext).toEqual([]);
    expect(answers[0]!.status).not.toBe(500); // a refusal or INVALID_CONFIG (no PKI here), never the join's internal failure
    for (const answer of answers) {
      expect(answer.headers['transfer-encoding']).toBeUndefined();
      expect(answer.headers.vary).toBeUndefined();
      expect({ ...answer, headers: withoutDate(answer.headers) }).toEqual({ ...answers[0]!, headers: withoutDate(answers[0]!.headers) });
    }
    expect(answers[0]!.headers['content-length']).toBe(String(Buffer.byteLength(answers[0]!.body)));
    expect(normalizedPath('//api/compute/v1/join')).toBe('//api/compute/v1/join');
  });

  it('serves the well-known document without authentication before Next, and HEAD like GET without a body', async () => {
    const { port, seenByNext } = await start();
    for (const path of ['/api/compute/.well-known/better-compute', '/api/compute/v1/../.well-known/better-compute?x=1']) {
      const get = await send(port, 'GET', path);
      expect(get.status).toBe(200);
      expect(get.headers['content-type']).toBe('application/json');
      expect(get.headers['cache-control']).toBe('public, max-age=60');
      expect(get.headers['content-length']).toBe(String(Buffer.byteLength(get.body)));
      const doc = JSON.parse(get.body);
      // The test database has no PKI: no join section yet.
      expect(doc).toEqual({
        name: 'better-compute',
        version: expect.stringMatching(/^\d+\.\d+\.\d+/),
        basePath: '/api/compute',
        protocol: { min: 1, max: 1 },
      });
      const head = await send(port, 'HEAD', path);
      expect(head.status).toBe(200);
      expect(head.headers['content-length']).toBe(get.headers['content-length']);
      expect(head.body).toBe('');
    }
    // Any other method is the REST API's to refuse, through Next.
    expect((await send(port, 'POST', '/api/compute/.well-known/better-compute', '{}')).body).toBe('next');
    expect(seenByNext).toEqual(['/api/compute/.well-known/better-compute']);
  });

  it('answers malformed percent-encoding under /api with 400 and TRACE with 405 and Allow, in the error model', async () => {
    const { port, seenByNext } = await start();
    const malformed = await send(port, 'GET', '/api/compute/%');
    expect(malformed.status).toBe(400);
    expect(JSON.parse(malformed.body)).toMatchObject({ code: 'INVALID_ARGUMENT' });
    for (const method of ['TRACE', 'PUT', 'DELETE', 'PROPFIND']) {
      const refused = await send(port, method, '/api/compute/v1/tenants');
      expect(refused.status, method).toBe(405);
      expect(refused.headers.allow).toBe('GET, HEAD, POST');
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    expect(seenByNext).toEqual([]);
  });

  it('puts the security headers on every answer, and no-store on API answers', async () => {
    const { port } = await start();
    for (const path of ['/pools', '/api/compute/v1/tenants', '/_next/static/x.js']) {
      const answer = await send(port, 'GET', path);
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(answer.headers['x-frame-options']).toBe('DENY');
      expect(answer.headers['referrer-policy']).toBe('no-referrer');
      expect(answer.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(answer.headers['content-security-policy']).not.toContain("unsafe-inline'; script");
    }
    expect((await send(port, 'GET', '/api/compute/v1/tenants')).headers['cache-control']).toBe('no-store');
    expect((await send(port, 'POST', '/api/compute/v1/join', '{}')).headers['x-frame-options']).toBe('DENY');
  });

  it('drops a client that trickles its body, within the request timeout', async () => {
    const { port } = await start({ headersMs: 200, requestMs: 400, keepAliveMs: 1_000, checkIntervalMs: 50 });
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    socket.write('POST /api/compute/v1/join HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n');
    // One byte every 50 ms would take 80 minutes; the server must not wait for it.
    const trickle = setInterval(() => socket.writable && socket.write('{'), 50);
    const closed = await new Promise<boolean>((resolve) => {
      socket.once('close', () => resolve(true));
      setTimeout(() => resolve(false), 10_000);
    });
    clearInterval(trickle);
    expect(closed).toBe(true);
    expect(received.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
  });

  it('drops a client that never finishes its headers', async () => {
    const { port } = await start({ headersMs: 200, requestMs: 400, keepAliveMs: 1_000, checkIntervalMs: 50 });
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    socket.write('GET /api/compute/openapi.json HTTP/1.1\r\nhost: x\r\n');
    const closed = await new Promise<boolean>((resolve) => {
      socket.once('close', () => resolve(true));
      setTimeout(() => resolve(false), 10_000);
    });
    expect(closed).toBe(true);
    expect(received.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
  });
});

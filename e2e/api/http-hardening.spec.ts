import http from 'node:http';
import { expect, test } from '@playwright/test';

// The HTTP surface as the production server serves it: the boot server in front of Next.

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** A request whose path goes on the wire exactly as written (Playwright's client would normalise `/./`). */
function raw(baseURL: string, method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Raw> {
  const { hostname, port } = new URL(baseURL);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: hostname,
        port,
        method,
        path,
        headers: { ...(body ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}), ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const comparable = ({ date: _d, connection: _c, 'keep-alive': _k, ...rest }: http.IncomingHttpHeaders) => rest;

test('every route to the join answers the same bytes and headers', async ({ baseURL }) => {
  const answers = [];
  for (const path of ['/api/compute/v1/join', '/api/compute/v1/./join', '/api/compute/v1/%2e/join', '/api/compute/x/../v1/join']) {
    answers.push(await raw(baseURL!, 'POST', path, 'not json at all'));
  }
  expect(answers[0]!.status).toBe(403);
  for (const answer of answers) {
    expect(answer.headers['transfer-encoding']).toBeUndefined();
    expect(answer.headers.vary).toBeUndefined();
    expect(comparable(answer.headers)).toEqual(comparable(answers[0]!.headers));
    expect(answer.body.equals(answers[0]!.body)).toBe(true);
  }
});

test('refusals in the error model: malformed escapes 400, TRACE 405 with Allow, HEAD like GET', async ({ baseURL }) => {
  const malformed = await raw(baseURL!, 'GET', '/api/compute/%');
  expect(malformed.status).toBe(400);
  expect(JSON.parse(malformed.body.toString())).toMatchObject({ code: 'INVALID_ARGUMENT' });
  for (const path of ['/api/compute/v1/tenants', '/api/trpc/tenants.list', '/api/compute/openapi.json']) {
    const trace = await raw(baseURL!, 'TRACE', path);
    expect(trace.status, path).toBe(405);
    expect(trace.headers.allow).toBe('GET, HEAD, POST');
    expect(JSON.parse(trace.body.toString())).toMatchObject({ code: 'INVALID_ARGUMENT' });
  }
  for (const path of ['/api/compute/.well-known/better-compute', '/api/compute/openapi.json']) {
    const [get, head] = [await raw(baseURL!, 'GET', path), await raw(baseURL!, 'HEAD', path)];
    expect(head.status, path).toBe(200);
    expect(head.headers['content-type']).toBe(get.headers['content-type']);
    expect(head.body.length).toBe(0);
  }
});

test('an anonymous large body is refused with 401 before it is read; an oversized one with a key is 413', async ({ baseURL }) => {
  const big = JSON.stringify({ name: 'x'.repeat(3 * 1024 * 1024) });
  const anonymous = await raw(baseURL!, 'POST', '/api/compute/v1/tenants', big);
  expect(anonymous.status).toBe(401);
  const forged = await raw(baseURL!, 'POST', '/api/compute/v1/tenants', big, {
    authorization: `Bearer bcak_ak_${'0'.repeat(26)}.${'A'.repeat(43)}`,
  });
  expect(forged.status).toBe(401);
});

test('security headers on the console and the API; the console CSP carries a nonce its scripts use', async ({ request }) => {
  const page = await request.get('/login');
  expect(page.status()).toBe(200);
  const csp = page.headers()['content-security-policy']!;
  expect(csp).toContain("frame-ancestors 'none'");
  const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
  expect(nonce).toBeTruthy();
  expect(csp).not.toMatch(/script-src[^;]*'unsafe-inline'/);
  const html = await page.text();
  const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
  expect(scripts.length).toBeGreaterThan(0);
  for (const tag of scripts) expect(tag).toContain(`nonce="${nonce}"`);
  expect(page.headers()['x-frame-options']).toBe('DENY');
  expect(page.headers()['x-content-type-options']).toBe('nosniff');
  expect(page.headers()['referrer-policy']).toBeTruthy();
  // A second load gets another nonce.
  expect((await request.get('/login')).headers()['content-security-policy']).not.toBe(csp);

  const api = await request.get('/api/compute/v1/tenants');
  expect(api.headers()['cache-control']).toBe('no-store');
  expect(api.headers()['x-frame-options']).toBe('DENY');
  expect(api.headers()['x-content-type-options']).toBe('nosniff');
});

test('tRPC refuses a form-encoded mutation and an oversized batch', async ({ request }) => {
  const form = await request.post('/api/trpc/tenants.create', { multipart: { name: 'nope' } });
  expect(form.status()).toBe(415);
  const text = await request.post('/api/trpc/tenants.create', { data: '{"name":"nope"}', headers: { 'content-type': 'text/plain' } });
  expect(text.status()).toBe(415);
  const calls = Array.from({ length: 100 }, () => 'tenants.list').join(',');
  const input = encodeURIComponent(JSON.stringify(Object.fromEntries(Array.from({ length: 100 }, (_, i) => [i, {}]))));
  expect((await request.get(`/api/trpc/${calls}?batch=1&input=${input}`)).status()).toBe(400);
});

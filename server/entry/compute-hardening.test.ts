import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { insertApiKey } from '../api-keys/api-keys';
import type { SessionClaim } from '../operators/operators';
import { signedInOperator } from '../../test/console-session';
import { handleComputeRequest } from './compute';
import { DEFAULT_MAX_BODY_BYTES, isJsonContentType, readRequestText } from '../http/body';
import { checkSessionOrigin } from '../http/request-rules';

const base = 'http://console.test/api/compute';
const MiB = 1024 * 1024;

function call(path: string, init: RequestInit & { session?: SessionClaim } = {}) {
  const { session, ...rest } = init;
  return handleComputeRequest(new Request(base + path, { duplex: 'half', ...rest } as RequestInit), {
    db: testDb(),
    sessionOperatorId: async () => session ?? null,
  });
}

/** An endless body that counts how many chunks the server pulled from it. */
function endlessBody(chunk = MiB) {
  const counter = { pulls: 0 };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        counter.pulls += 1;
        controller.enqueue(new Uint8Array(chunk).fill(0x20));
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, counter };
}

async function adminKey() {
  const t = await createTestTenant(testDb());
  const { key } = await insertApiKey(testDb(), { tenantId: t.tenantId, role: 'admin', name: 'hardening' }, 'test');
  return { t, key, authorization: `Bearer ${key}` };
}

describe('REST bodies', () => {
  it('answer 401 to an anonymous POST without reading its body', async () => {
    const { stream, counter } = endlessBody();
    const response = await call('/v1/tenants', { method: 'POST', body: stream, headers: { 'content-type': 'application/json' } });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(counter.pulls).toBe(0);
  });

  it('answer 401 to an invalid key without reading its body', async () => {
    const { stream, counter } = endlessBody();
    const headers = { 'content-type': 'application/json', authorization: 'Bearer bcak_nope' };
    expect((await call('/v1/tenants', { method: 'POST', body: stream, headers })).status).toBe(401);
    expect(counter.pulls).toBe(0);
  });

  it('cap an authenticated body at 1 MiB with 413 in the error model, reading no more than the cap', async () => {
    const { authorization } = await adminKey();
    const { stream, counter } = endlessBody(64 * 1024);
    const response = await call('/v1/tenants', {
      method: 'POST',
      body: stream,
      headers: { 'content-type': 'application/json', authorization },
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({ code: 'INVALID_ARGUMENT', message: expect.stringContaining(String(DEFAULT_MAX_BODY_BYTES)) });
    expect(counter.pulls).toBeLessThanOrEqual(DEFAULT_MAX_BODY_BYTES / (64 * 1024) + 1);
  });

  it('refuse a declared length over the cap before reading', async () => {
    const body = new Uint8Array(16);
    const request = new Request(`${base}/v1/tenants`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'content-length': String(2 * MiB) },
    });
    expect(request.headers.get('content-length')).toBe(String(2 * MiB));
    await expect(readRequestText(request, MiB)).rejects.toMatchObject({ status: 413 });
    await expect(readRequestText(new Request(`${base}/x`, { method: 'POST', body: 'x'.repeat(11) }), 10)).rejects.toMatchObject({
      status: 413,
    });
    expect(await readRequestText(new Request(`${base}/x`, { method: 'POST', body: 'x'.repeat(10) }), 10)).toBe('x'.repeat(10));
  });

  it('accept application/json only, exactly', async () => {
    const { t, authorization } = await adminKey();
    const body = JSON.stringify({ siteId: t.siteId, name: `p-${randomBytes(3).toString('hex')}`, agent: 'none' });
    for (const contentType of [
      'application/json-seq',
      'text/plain',
      'multipart/form-data; boundary=x',
      'application/x-www-form-urlencoded',
      'application/jsonx',
    ]) {
      const refused = await call(`/v1/tenants/${t.tenantId}/pools`, {
        method: 'POST',
        body,
        headers: { 'content-type': contentType, authorization },
      });
      expect(refused.status, contentType).toBe(415);
      expect(await refused.json()).toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    const accepted = await call(`/v1/tenants/${t.tenantId}/pools`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json; charset=utf-8', authorization },
    });
    expect(accepted.status).toBe(201);
    expect(isJsonContentType('Application/JSON')).toBe(true);
    expect(isJsonContentType('application/json; charset=latin1')).toBe(false);
  });

  it('name the field of an unknown key; say what a non-object body was', async () => {
    const { t, authorization } = await adminKey();
    const headers = { 'content-type': 'application/json', authorization };
    const unknown = await call(`/v1/tenants/${t.tenantId}/pools`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ siteId: t.siteId, name: 'x', agent: 'none', colour: 'red' }),
    });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'colour' });
    for (const [body, word] of [
      ['[1]', 'an array'],
      ['"text"', 'a string'],
      ['null', 'null'],
      ['7', 'a number'],
    ] as const) {
      const refused = await call(`/v1/tenants/${t.tenantId}/pools`, { method: 'POST', headers, body });
      expect(refused.status).toBe(400);
      expect((await refused.json()).message).toContain(word);
    }
  });
});

describe('REST with a console session', () => {
  async function session() {
    const db = testDb();
    const t = await createTestTenant(db);
    return { t, claim: await signedInOperator(db, t.tenantId, 'admin') };
  }

  it('refuses a mutation from another origin or site, and takes the console’s own', async () => {
    const { t, claim } = await session();
    const post = (headers: Record<string, string>) =>
      call(`/v1/tenants/${t.tenantId}/pools`, {
        method: 'POST',
        session: claim,
        headers: { 'content-type': 'application/json', host: 'console.test', ...headers },
        body: JSON.stringify({ siteId: t.siteId, name: `p-${randomBytes(3).toString('hex')}`, agent: 'none' }),
      });
    const foreign: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site', origin: 'http://other.console.test' },
    ];
    for (const headers of foreign) {
      const refused = await post(headers);
      expect(refused.status, JSON.stringify(headers)).toBe(403);
      expect(await refused.json()).toMatchObject({ code: 'ACCESS_DENIED' });
    }
    expect((await post({ origin: 'http://console.test', 'sec-fetch-site': 'same-origin' })).status).toBe(201);
    // A session must send JSON even without a body: a form post cannot.
    const form = await call(`/v1/tenants/${t.tenantId}/pools`, {
      method: 'POST',
      session: claim,
      headers: { 'content-type': 'text/plain', host: 'console.test' },
      body: '{}',
    });
    expect(form.status).toBe(415);
  });

  it('checks origins against the public URL or the Host', () => {
    const headers = (h: Record<string, string>) => new Headers(h);
    expect(checkSessionOrigin(headers({ origin: 'https://console.example.com' }), 'https://console.example.com/')).toBeNull();
    expect(
      checkSessionOrigin(headers({ origin: 'http://localhost:3000', host: 'localhost:3000' }), 'https://console.example.com'),
    ).toBeNull();
    expect(checkSessionOrigin(headers({ origin: 'null', host: 'localhost:3000' }), undefined)).not.toBeNull();
    expect(checkSessionOrigin(headers({}), undefined)).toBeNull();
  });
});

describe('the compute surface', () => {
  it('answers HEAD on the OpenAPI document like GET without a body', async () => {
    // (The well-known document is the boot server's: server/boot/http-server.test.ts.)
    for (const path of ['/openapi.json']) {
      const [get, head] = [await call(path), await call(path, { method: 'HEAD' })];
      expect(head.status).toBe(200);
      expect(head.headers.get('content-type')).toBe('application/json');
      expect(head.headers.get('content-length')).toBe(String((await get.arrayBuffer()).byteLength));
      expect((await head.arrayBuffer()).byteLength).toBe(0);
    }
  });

  it('answers 405 with Allow in the error model to methods it does not serve', async () => {
    // (undici cannot build a TRACE Request; the boot server answers TRACE itself, see http-server.test.ts.)
    for (const method of ['PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
      const response = await call('/v1/tenants', { method });
      expect(response.status, method).toBe(405);
      expect(response.headers.get('allow')).toBe('GET, HEAD, POST');
      expect(await response.json()).toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
  });

  it('answers 400 in the error model to malformed percent-encoding', async () => {
    for (const path of ['/%', '/v1/tenants/%E0%A4%A', '/v1/%zz']) {
      const response = await call(path);
      expect(response.status, path).toBe(400);
      expect(await response.json()).toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
  });

  it('marks API answers no-store', async () => {
    const response = await call('/v1/tenants');
    expect(response.headers.get('cache-control')).toBe('no-store');
  });
});

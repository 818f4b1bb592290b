import { randomUUID } from 'node:crypto';
import { expect, test, type APIRequestContext } from '@playwright/test';
import { uniqueName } from '../support/env';
import { signInOverHttp, trpc } from '../support/session';

/**
 * Mutations riding on the console's session cookie must come from the console itself, and a viewer is
 * refused whatever a page shows: the server decides, not the console's hidden buttons.
 */

let session: APIRequestContext;
let tenantId: string;
let poolId: string;

test.beforeAll(async ({ playwright, baseURL }) => {
  session = await playwright.request.newContext({ baseURL });
  await signInOverHttp(session);
  const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(session, 'query', 'tenants.list', {});
  tenantId = tenants.find((t) => t.isRoot)!.id;
  // A pool of its own: other specs running at the same time mint tokens in the default pool, and these tests
  // compare the pool's tokens before and after. One live token, so a viewer has something to try to revoke.
  const site = await trpc<{ id: string }>(session, 'mutation', 'sites.create', { tenantId, name: uniqueName('safety-site') });
  poolId = (
    await trpc<{ id: string }>(session, 'mutation', 'pools.create', {
      tenantId,
      siteId: site.id,
      name: uniqueName('safety-pool'),
      agent: 'bcd',
    })
  ).id;
  await trpc(session, 'mutation', 'joinTokens.create', { tenantId, poolId, ttlSeconds: 600, idempotencyKey: randomUUID() });
});
test.afterAll(async () => {
  await session.dispose();
});

const liveTokenIds = async () =>
  (
    await trpc<{ items: { id: string }[] }>(session, 'query', 'joinTokens.list', { tenantId, poolId, includeInactive: true, limit: 200 })
  ).items.map((t) => t.id);

test('a cross-site form post and a text/plain POST carrying the session cookie are refused, and create nothing', async () => {
  const before = await liveTokenIds();
  const input = JSON.stringify({ tenantId, poolId, ttlSeconds: 600, idempotencyKey: randomUUID() });
  // What an attacker's page can send without CORS: a form post, from its own origin.
  const form = await session.post('/api/trpc/joinTokens.create', {
    form: { input },
    headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
  });
  expect(form.status()).toBeGreaterThanOrEqual(400);
  expect(form.status()).toBeLessThan(500);
  // …or a "simple" fetch with a text/plain body that happens to be JSON.
  const text = await session.post('/api/trpc/joinTokens.create', { data: input, headers: { 'content-type': 'text/plain' } });
  expect(text.status()).toBe(415);
  const textCrossSite = await session.post('/api/trpc/joinTokens.create', {
    data: input,
    headers: { 'content-type': 'text/plain;charset=UTF-8', origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
  });
  expect(textCrossSite.status()).toBe(415);
  // JSON needs CORS preflight, which this server never grants; with another Origin it is refused too.
  const json = await session.post('/api/trpc/joinTokens.create', {
    data: input,
    headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
  });
  expect(json.status()).toBe(403);
  expect(await liveTokenIds()).toEqual(before);

  // The same call from the console's own origin works: the refusals above are about where it came from.
  const same = await session.post('/api/trpc/joinTokens.create', { data: input, headers: { 'content-type': 'application/json' } });
  expect(same.status()).toBe(200);
});

test('a viewer reads but its forged mutations are refused', async ({ playwright, baseURL }) => {
  const { key } = await trpc<{ key: string }>(session, 'mutation', 'apiKeys.create', {
    tenantId,
    role: 'viewer',
    name: uniqueName('viewer'),
  });
  const viewer = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { authorization: `Bearer ${key}` } });
  try {
    const list = await viewer.get(`/api/trpc/joinTokens.list?input=${encodeURIComponent(JSON.stringify({ tenantId, poolId }))}`);
    expect(list.status()).toBe(200);
    const before = await liveTokenIds();
    const create = await viewer.post('/api/trpc/joinTokens.create', {
      data: { tenantId, poolId, ttlSeconds: 600, idempotencyKey: randomUUID() },
    });
    expect(create.status()).toBe(403);
    const [someToken] = before;
    if (someToken) {
      const revoke = await viewer.post('/api/trpc/joinTokens.revoke', { data: { tenantId, poolId, tokenId: someToken } });
      expect(revoke.status()).toBe(403);
    }
    const archive = await viewer.post('/api/trpc/pools.archive', { data: { tenantId, poolId } });
    expect(archive.status()).toBe(403);
    expect(await liveTokenIds()).toEqual(before);
    // The role the console reads to leave out controls.
    const tenants = await (await viewer.get(`/api/trpc/tenants.list?input=${encodeURIComponent('{}')}`)).json();
    expect(tenants.result.data.items.find((t: { id: string }) => t.id === tenantId).role).toBe('viewer');
  } finally {
    await viewer.dispose();
  }
});

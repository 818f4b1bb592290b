import { expect, test, type APIResponse } from '@playwright/test';
import { signInOverHttp, trpc } from '../support/session';

async function expectUnauthenticated(response: APIResponse) {
  expect(response.status()).toBe(401);
  expect(response.headers()['content-type']).toMatch(/^application\/json/);
  const body = await response.json();
  expect(body).toEqual({ code: 'UNAUTHENTICATED', message: expect.any(String) });
}

test.describe('REST authentication', () => {
  test('no key is 401 UNAUTHENTICATED', async ({ request }) => {
    await expectUnauthenticated(await request.get('/api/compute/v1/tenants'));
    await expectUnauthenticated(await request.post('/api/compute/v1/tenants', { data: { name: 'nope' } }));
  });

  test('a key that is not a live API key is 401', async ({ request }) => {
    const wellFormed = `bcak_ak_${'0'.repeat(26)}.${'A'.repeat(43)}`;
    for (const authorization of [`Bearer ${wellFormed}`, 'Bearer not-a-key', 'Basic YWRtaW46YWRtaW4=']) {
      await expectUnauthenticated(await request.get('/api/compute/v1/tenants', { headers: { authorization } }));
    }
  });

  test('a key made in a console session works until it is revoked', async ({ playwright, baseURL }) => {
    const session = await playwright.request.newContext({ baseURL });
    const anonymous = await playwright.request.newContext({ baseURL });
    try {
      await signInOverHttp(session);
      const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(session, 'query', 'tenants.list', {});
      const tenantId = tenants.find((t) => t.isRoot)!.id;
      const created = await trpc<{ id: string; key: string }>(session, 'mutation', 'apiKeys.create', {
        tenantId,
        role: 'viewer',
        name: 'e2e rest auth',
      });
      const authorization = `Bearer ${created.key}`;

      const listed = await anonymous.get(`/api/compute/v1/tenants/${tenantId}/pools`, { headers: { authorization } });
      expect(listed.status()).toBe(200);
      expect((await listed.json()).items).toContainEqual(expect.objectContaining({ name: 'default', agent: 'bcd' }));

      await trpc(session, 'mutation', 'apiKeys.revoke', { tenantId, apiKeyId: created.id });
      await expectUnauthenticated(await anonymous.get(`/api/compute/v1/tenants/${tenantId}/pools`, { headers: { authorization } }));
    } finally {
      await session.dispose();
      await anonymous.dispose();
    }
  });
});

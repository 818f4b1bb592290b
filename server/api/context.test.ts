import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createApiContext } from './context';
import { appRouter } from './root';

const call = (path: string, headers: Record<string, string>) => {
  const request = new Request(`http://test.local/api/trpc/${path}`, { headers });
  return fetchRequestHandler({
    endpoint: '/api/trpc',
    req: request,
    router: appRouter,
    createContext: () => createApiContext(testDb(), request.headers, async () => null),
  });
};

describe('tRPC over HTTP', () => {
  it('answers 401 UNAUTHENTICATED to an invalid API key and to no credentials, never 500', async () => {
    const t = await createTestTenant(testDb());
    const input = encodeURIComponent(JSON.stringify({ tenantId: t.tenantId }));
    for (const headers of [{ authorization: 'Bearer bcak_not-a-key' }, {}] as Record<string, string>[]) {
      const response = await call(`pools.list?input=${input}`, headers);
      expect(response.status).toBe(401);
      const body = await response.json();
      expect(body.error.data).toMatchObject({ code: 'UNAUTHORIZED', domainCode: 'UNAUTHENTICATED', httpStatus: 401 });
      expect(body.error.data.stack).toBeUndefined();
    }
  });

  it('names the field of bad input and refuses unknown fields', async () => {
    const t = await createTestTenant(testDb());
    const { insertApiKey } = await import('../api-keys/api-keys');
    const { key } = await insertApiKey(testDb(), { tenantId: t.tenantId, role: 'admin', name: 'k' }, 'test');
    const input = encodeURIComponent(JSON.stringify({ tenantId: t.tenantId, includeArchivd: true }));
    const response = await call(`pools.list?input=${input}`, { authorization: `Bearer ${key}` });
    expect(response.status).toBe(400);
    const body = await response.json();
    expect(body.error.data).toMatchObject({ domainCode: 'INVALID_ARGUMENT' });
    expect(body.error.message).toContain('includeArchivd');

    // The console's infinite lists send the page direction tRPC adds; it is part of those inputs.
    for (const path of ['events.list', 'joinTokens.list']) {
      const paged = encodeURIComponent(JSON.stringify({ tenantId: t.tenantId, poolId: t.pool.id, direction: 'forward' }));
      const ok = await call(
        `${path}?input=${path === 'events.list' ? encodeURIComponent(JSON.stringify({ tenantId: t.tenantId, direction: 'forward' })) : paged}`,
        { authorization: `Bearer ${key}` },
      );
      expect(ok.status, path).toBe(200);
    }
  });
});

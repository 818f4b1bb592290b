import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { insertApiKey } from '../api-keys/api-keys';
import { handleComputeRequest } from './compute';

const base = 'http://test.local/api/compute';
const call = (path: string, init: RequestInit & { key?: string } = {}) =>
  handleComputeRequest(
    new Request(base + path, {
      ...init,
      headers: {
        ...(init.key ? { authorization: `Bearer ${init.key}` } : {}),
        ...(init.body ? { 'content-type': 'application/json' } : {}),
      },
    }),
    { db: testDb(), sessionOperatorId: async () => null },
  );

describe('REST API', () => {
  it('refuses missing and invalid credentials with 401 and the error model', async () => {
    const t = await createTestTenant(testDb());
    const anonymous = await call(`/v1/tenants/${t.tenantId}/pools`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ code: 'UNAUTHENTICATED' });
    const forged = await call(`/v1/tenants/${t.tenantId}/pools`, { key: 'bcak_ak_01m8ma917s0he7rk4w7m1b0zvj.' + 'A'.repeat(43) });
    expect(forged.status).toBe(401);
    const created = await insertApiKey(testDb(), { tenantId: t.tenantId, role: 'admin', name: 'k' }, 'test');
    const revoked = created.key;
    await testDb().apiKey.update({ where: { id: created.id }, data: { revokedAt: new Date() } });
    expect((await call(`/v1/tenants/${t.tenantId}/pools`, { key: revoked })).status).toBe(401);
  });

  it('maps procedures, status codes and errors for an API key', async () => {
    const db = testDb();
    const [t, other] = await Promise.all([createTestTenant(db), createTestTenant(db)]);
    const { key } = await insertApiKey(db, { tenantId: t.tenantId, role: 'admin', name: 'automation' }, 'test');
    const { key: viewerKey } = await insertApiKey(db, { tenantId: t.tenantId, role: 'viewer', name: 'ro' }, 'test');

    const created = await call(`/v1/tenants/${t.tenantId}/pools`, {
      method: 'POST',
      key,
      body: JSON.stringify({ siteId: t.site.id, name: 'rest-pool', agent: 'none' }),
    });
    expect(created.status).toBe(201);
    const pool = await created.json();
    expect(pool).toMatchObject({ name: 'rest-pool', agent: 'none', tenantId: t.tenantId });

    const list = await call(`/v1/tenants/${t.tenantId}/pools?includeArchived=true`, { key });
    expect(list.status).toBe(200);
    expect((await list.json()).items.map((p: { name: string }) => p.name).sort()).toEqual(['pool-a', 'rest-pool']);

    const bad = await call(`/v1/tenants/${t.tenantId}/pools`, {
      method: 'POST',
      key,
      body: JSON.stringify({ siteId: t.site.id, name: 'rest-pool', agent: 'bcd' }),
    });
    expect(bad.status).toBe(409);
    expect(await bad.json()).toEqual({ code: 'ALREADY_EXISTS', message: expect.stringContaining('rest-pool'), field: 'name' });

    const invalid = await call(`/v1/tenants/${t.tenantId}/pools`, { method: 'POST', key, body: '{not json' });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ code: 'INVALID_ARGUMENT' });

    const cross = await call(`/v1/tenants/${other.tenantId}/pools/${other.pool.id}`, { key });
    expect(cross.status).toBe(404);
    expect(await cross.json()).toMatchObject({ code: 'NOT_FOUND' });

    const denied = await call(`/v1/tenants/${t.tenantId}/pools/${pool.id}/archive`, { method: 'POST', key: viewerKey });
    expect(denied.status).toBe(403);
    expect(await denied.json()).toMatchObject({ code: 'ACCESS_DENIED' });

    const archived = await call(`/v1/tenants/${t.tenantId}/pools/${pool.id}/archive`, { method: 'POST', key });
    expect(archived.status).toBe(200);
    expect((await archived.json()).archivedAt).not.toBeNull();

    expect((await call('/v1/nothing-here', { key })).status).toBe(404);
    expect((await call(`/v1/tenants/${t.tenantId}/pools`, { method: 'DELETE', key })).status).toBe(405);
  });

  it('publishes an OpenAPI 3 document generated from the routes', async () => {
    const response = await call('/openapi.json');
    expect(response.status).toBe(200);
    const doc = await response.json();
    expect(doc.openapi).toMatch(/^3\./);
    const create = doc.paths['/v1/tenants/{tenantId}/pools'].post;
    expect(create.operationId).toBe('pools.create');
    expect(create.requestBody.content['application/json'].schema.required).toEqual(expect.arrayContaining(['siteId', 'name', 'agent']));
    expect(create.responses['201'].content['application/json'].schema.properties).toHaveProperty('archivedAt');
    expect(doc.paths['/v1/tenants/{tenantId}/sites/{siteId}/archive'].post.parameters.map((p: { name: string }) => p.name)).toEqual([
      'tenantId',
      'siteId',
    ]);
    expect(doc.components.schemas.Error.properties.code.enum).toContain('INVALID_STATE');
  });
});

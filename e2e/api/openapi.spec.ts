import { expect, test } from '@playwright/test';

/** Every REST route of the management API, as `METHOD path` → operationId (the tRPC procedure it adapts). */
const ROUTES: Record<string, string> = {
  'GET /v1/tenants': 'tenants.list',
  'POST /v1/tenants': 'tenants.create',
  'GET /v1/tenants/{tenantId}/sites': 'sites.list',
  'POST /v1/tenants/{tenantId}/sites': 'sites.create',
  'GET /v1/tenants/{tenantId}/sites/{siteId}': 'sites.get',
  'POST /v1/tenants/{tenantId}/sites/{siteId}/archive': 'sites.archive',
  'GET /v1/tenants/{tenantId}/pools': 'pools.list',
  'POST /v1/tenants/{tenantId}/pools': 'pools.create',
  'GET /v1/tenants/{tenantId}/pools/{poolId}': 'pools.get',
  'POST /v1/tenants/{tenantId}/pools/{poolId}/archive': 'pools.archive',
  'GET /v1/tenants/{tenantId}/api-keys': 'apiKeys.list',
  'POST /v1/tenants/{tenantId}/api-keys': 'apiKeys.create',
  'POST /v1/tenants/{tenantId}/api-keys/{apiKeyId}/revoke': 'apiKeys.revoke',
  'GET /v1/tenants/{tenantId}/events': 'events.list',
  'GET /v1/pki/rotation': 'pki.rotation.status',
  'POST /v1/pki/rotation/{kind}/prepare': 'pki.rotation.prepare',
  'POST /v1/pki/rotation/{kind}/activate': 'pki.rotation.activate',
  'POST /v1/pki/rotation/{kind}/retire': 'pki.rotation.retire',
};

test('the OpenAPI document describes the REST routes', async ({ request }) => {
  const response = await request.get('/api/compute/openapi.json');
  expect(response.status()).toBe(200);
  expect(response.headers()['content-type']).toMatch(/^application\/json/);
  const doc = await response.json();

  expect(doc.openapi).toMatch(/^3\./);
  expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
  expect(doc.servers).toEqual([{ url: '/api/compute' }]);
  expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
  expect(doc.components.schemas.Error.required).toEqual(['code', 'message']);

  const served: Record<string, string> = {};
  for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, { operationId: string }>>)) {
    for (const [method, operation] of Object.entries(operations)) served[`${method.toUpperCase()} ${path}`] = operation.operationId;
  }
  // At least these: routes added later (join tokens, nodes) must not break this test.
  expect(served).toMatchObject(ROUTES);

  const createPool = doc.paths['/v1/tenants/{tenantId}/pools'].post;
  expect(createPool.parameters).toContainEqual(expect.objectContaining({ name: 'tenantId', in: 'path', required: true }));
  expect(createPool.requestBody.content['application/json'].schema.required).toEqual(expect.arrayContaining(['siteId', 'name', 'agent']));
  expect(createPool.responses['201']).toBeDefined();

  const prepare = doc.paths['/v1/pki/rotation/{kind}/prepare'].post;
  expect(prepare.parameters).toContainEqual(expect.objectContaining({ name: 'kind', in: 'path', required: true }));
  expect(Object.keys(prepare.requestBody.content['application/json'].schema.properties)).toEqual(['from']);
  const status = doc.paths['/v1/pki/rotation'].get.responses['200'].content['application/json'].schema;
  expect(status.required).toEqual(expect.arrayContaining(['trustVersion', 'keys']));
});

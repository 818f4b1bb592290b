import { expect, test } from '@playwright/test';

const PIN = /^sha256\/[A-Za-z0-9+/]{43}=$/;
const B64 = /^[A-Za-z0-9+/]+={0,2}$/;
const B64URL = /^[A-Za-z0-9_-]+$/;

test('the well-known document has the shape protocol.md fixes, without authentication', async ({ request }) => {
  const response = await request.get('/api/compute/.well-known/better-compute');
  expect(response.status()).toBe(200);
  expect(response.headers()['content-type']).toMatch(/^application\/json/);
  const doc = await response.json();

  expect(Object.keys(doc).filter((key) => !['name', 'version', 'basePath', 'protocol', 'join', 'gateway'].includes(key))).toEqual([]);
  expect(doc.name).toBe('better-compute');
  expect(doc.version).toMatch(/^\d+\.\d+\.\d+/);
  expect(doc.basePath).toBe('/api/compute');
  expect(doc.protocol).toEqual({ min: 1, max: 1 });

  // `join` appears once JoinService keys are configured; a first start creates a development PKI, so the
  // server under test has them. Its JWK must be public only.
  expect(Object.keys(doc.join ?? {}).sort()).toEqual(['encryptionJwk', 'encryptionKeyPin', 'signingCertificate', 'signingKeyPin']);
  expect(doc.join.encryptionJwk).toMatchObject({ kty: 'EC', crv: 'P-256' });
  expect(doc.join.encryptionJwk.x).toMatch(B64URL);
  expect(doc.join.encryptionJwk.y).toMatch(B64URL);
  expect(doc.join.encryptionJwk).not.toHaveProperty('d');
  expect(doc.join.encryptionKeyPin).toMatch(PIN);
  expect(doc.join.signingCertificate).toMatch(B64);
  expect(doc.join.signingKeyPin).toMatch(PIN);

  // `gateway` appears only when a gateway is configured (BETTER_COMPUTE_GATEWAY_URL).
  if (doc.gateway !== undefined) {
    expect(typeof doc.gateway.url).toBe('string');
    expect(typeof doc.gateway.serverName).toBe('string');
    expect(doc.gateway.servingCaPin).toMatch(PIN);
  }
});

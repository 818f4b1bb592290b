import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { signedInOperator } from '../../test/console-session';
import { handleTrpcRequest } from './trpc-http';
import { TRPC_MAX_BATCH_SIZE } from '../../protocol/api/trpc-limits';

async function signedIn() {
  const db = testDb();
  const t = await createTestTenant(db);
  return { t, claim: await signedInOperator(db, t.tenantId, 'admin') };
}

const call = (path: string, init: RequestInit, claim: { operatorId: string; sessionVersion: number } | null) =>
  handleTrpcRequest(new Request(`http://console.test/api/trpc/${path}`, init), { db: testDb(), sessionOperatorId: async () => claim });

describe('tRPC over HTTP, hardened', () => {
  it('refuses a batch larger than the cap', async () => {
    const { t, claim } = await signedIn();
    const batch = (n: number) => {
      const paths = Array.from({ length: n }, () => 'pools.list').join(',');
      const input = Object.fromEntries(Array.from({ length: n }, (_, i) => [i, { tenantId: t.tenantId }]));
      return call(`${paths}?batch=1&input=${encodeURIComponent(JSON.stringify(input))}`, {}, claim);
    };
    expect((await batch(TRPC_MAX_BATCH_SIZE)).status).toBe(200);
    expect((await batch(TRPC_MAX_BATCH_SIZE + 1)).status).toBe(400);
    expect((await batch(1000)).status).toBe(400);
  });

  it('takes mutations as application/json only', async () => {
    const { t, claim } = await signedIn();
    const body = JSON.stringify({ tenantId: t.tenantId, name: `s-${randomBytes(3).toString('hex')}` });
    for (const type of ['text/plain', 'multipart/form-data; boundary=x', 'application/json-seq', 'application/octet-stream']) {
      const refused = await call('sites.create', { method: 'POST', body, headers: { 'content-type': type } }, claim);
      expect(refused.status, type).toBe(415);
      expect(await refused.json()).toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    const form = new FormData();
    form.set('tenantId', t.tenantId);
    expect((await call('sites.create', { method: 'POST', body: form }, claim)).status).toBe(415);
    expect((await call('sites.create', { method: 'POST', body, headers: { 'content-type': 'application/json' } }, claim)).status).toBe(200);
  });

  it('refuses a session mutation from another origin or site', async () => {
    const { t, claim } = await signedIn();
    const post = (headers: Record<string, string>) =>
      call(
        'sites.create',
        {
          method: 'POST',
          body: JSON.stringify({ tenantId: t.tenantId, name: `s-${randomBytes(3).toString('hex')}` }),
          headers: { 'content-type': 'application/json', host: 'console.test', ...headers },
        },
        claim,
      );
    expect((await post({ origin: 'https://evil.example' })).status).toBe(403);
    expect((await post({ 'sec-fetch-site': 'same-site' })).status).toBe(403);
    expect((await post({ origin: 'http://console.test', 'sec-fetch-site': 'same-origin' })).status).toBe(200);
  });
});

import { randomBytes, randomUUID } from 'node:crypto';
import { expect, test, type APIRequestContext, type APIResponse } from '@playwright/test';
import { prepareJoinAttempt, type JoinTrust } from '../../agent/join';
import { signInOverHttp, trpc } from '../support/session';

// The agent endpoint as the production server serves it (the fast path in front of Next). Every refusal is
// the same status, headers and bytes, whatever was wrong with the request.
const REFUSED = '{"code":"ACCESS_DENIED","message":"Join refused"}';
const JOIN = '/api/compute/v1/join';

/** What a caller can compare between two answers: headers that vary per connection or instant are left out. */
async function observed(response: APIResponse) {
  const headers = response.headers();
  for (const name of ['date', 'keep-alive', 'connection']) delete headers[name];
  return { status: response.status(), headers, body: await response.body() };
}

test('every refused join answers the same 403 bytes and headers', async ({ request }) => {
  const bodies = [
    'not json at all',
    JSON.stringify({}),
    JSON.stringify({ sealedToken: 'a.b.c.d.e', csr: 'AAAA', claims: {}, attestor: '', role: 'node' }),
    JSON.stringify({ sealedToken: 'x', csr: '!!', claims: { macs: 'nope' } }),
    JSON.stringify({ sealedToken: 'x', csr: 'AAAA', attestor: 'tpm' }),
  ];
  const answers = [];
  for (const data of bodies) {
    const response = await request.post(JOIN, { data, headers: { 'content-type': 'application/json' } });
    const headers = response.headers();
    delete headers.date;
    answers.push({ status: response.status(), headers, body: await response.text() });
  }
  expect(answers[0]).toEqual({ status: 403, headers: expect.objectContaining({ 'content-type': 'application/json' }), body: REFUSED });
  for (const answer of answers) expect(answer).toEqual(answers[0]);
});

/** Claims of a distinct, trusted machine (a product UUID, a serial and a permanent MAC). */
function machineClaims() {
  return {
    productUuid: randomUUID(),
    productSerial: `SN-${randomBytes(4).toString('hex').toUpperCase()}`,
    macs: [`3c:ec:ef:${randomBytes(3).toString('hex').match(/../g)!.join(':')}`],
    hostname: 'e2e-join',
  };
}

test.describe('token-stage refusals over HTTP', () => {
  let session: APIRequestContext;
  test.beforeAll(async ({ playwright, baseURL }) => {
    session = await playwright.request.newContext({ baseURL });
    await signInOverHttp(session);
  });
  test.afterAll(async () => {
    await session.dispose();
  });

  test('a revoked and an exhausted token answer exactly what a malformed body does', async ({ request }) => {
    // The agent's trust, as bcd resolves it: the sealing key and the signing certificate of the well-known document.
    const doc = await (await request.get('/api/compute/.well-known/better-compute')).json();
    const trust: JoinTrust = {
      encryptionJwk: doc.join.encryptionJwk,
      signingCertificateDer: Buffer.from(doc.join.signingCertificate, 'base64'),
      signingKeyPin: doc.join.signingKeyPin,
    };
    const { items: tenants } = await trpc<{ items: { id: string; isRoot: boolean }[] }>(session, 'query', 'tenants.list', {});
    const tenantId = tenants.find((t) => t.isRoot)!.id;
    const { items: pools } = await trpc<{ items: { id: string; name: string; agent: string }[] }>(session, 'query', 'pools.list', {
      tenantId,
    });
    const poolId = pools.find((p) => p.name === 'default' && p.agent === 'bcd')!.id;
    const mint = (maxUses: number) =>
      trpc<{ id: string; token: string }>(session, 'mutation', 'joinTokens.create', {
        tenantId,
        poolId,
        ttlSeconds: 600,
        maxUses,
        idempotencyKey: randomUUID(),
      });
    const join = async (token: string) => {
      const attempt = await prepareJoinAttempt({ token, trust, claims: machineClaims() });
      const response = await request.post(JOIN, { data: attempt.body, headers: { 'content-type': 'application/json' } });
      return { response, csrSha256: attempt.keys.csrSha256 };
    };

    // An early refusal: the body is not even JSON.
    const early = await observed(await request.post(JOIN, { data: 'not json at all', headers: { 'content-type': 'application/json' } }));
    expect(early.status).toBe(403);
    expect(early.body.toString()).toBe(REFUSED);
    expect(early.headers['content-type']).toBe('application/json');
    expect(early.headers['cache-control']).toBe('no-store');

    const revoked = await mint(5);
    await trpc(session, 'mutation', 'joinTokens.revoke', { tenantId, poolId, tokenId: revoked.id });
    const revokedJoin = await join(revoked.token);

    const exhausted = await mint(1);
    const admitted = await join(exhausted.token);
    expect(admitted.response.status()).toBe(200);
    const exhaustedJoin = await join(exhausted.token);

    for (const late of [revokedJoin, exhaustedJoin]) {
      const answer = await observed(late.response);
      expect(answer.body.equals(early.body)).toBe(true);
      expect(answer).toEqual(early);
    }

    // Both requests reached the token stage (a bad seal would be refused earlier, as `join:token`).
    const { items: events } = await trpc<{ items: { data: { reason: string; csrSha256: string } }[] }>(session, 'query', 'events.list', {
      tenantId,
      type: 'security.join.refused',
      limit: 200,
    });
    const reasonOf = (csrSha256: string) => events.find((e) => e.data.csrSha256 === csrSha256)?.data.reason;
    expect(reasonOf(revokedJoin.csrSha256)).toBe('join-token:revoked');
    expect(reasonOf(exhaustedJoin.csrSha256)).toBe('join-token:exhausted');
  });
});

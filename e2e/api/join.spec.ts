import { expect, test } from '@playwright/test';

// The agent endpoint as the production server serves it (the fast path in front of Next). Every refusal is
// the same status, headers and bytes, whatever was wrong with the request.
const REFUSED = '{"code":"ACCESS_DENIED","message":"Join refused"}';

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
    const response = await request.post('/api/compute/v1/join', { data, headers: { 'content-type': 'application/json' } });
    const headers = response.headers();
    delete headers.date;
    answers.push({ status: response.status(), headers, body: await response.text() });
  }
  expect(answers[0]).toEqual({ status: 403, headers: expect.objectContaining({ 'content-type': 'application/json' }), body: REFUSED });
  for (const answer of answers) expect(answer).toEqual(answers[0]);
});

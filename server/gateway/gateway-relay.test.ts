import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOIN_REFUSED, MAX_JOIN_BODY_BYTES } from '../../protocol/join-wire';
import { RENEW_REFUSED } from '../../protocol/renew-wire';
import { SESSION_REFUSED } from '../../protocol/session-wire';
import { issueGatewayCertificate } from '../pki/issuance/gateway';
import { fixturePki } from '../../test/pki/fixtures';
import { createGateway, type GatewayServer } from './gateway';

const BASE = '/api/compute';
const { bundle } = fixturePki();
const cert = issueGatewayCertificate(bundle, { sans: ['localhost', '127.0.0.1'] });

// An API that holds every call until released: the relay's sockets fill, and calls queue behind them.
const held: http.ServerResponse[] = [];
let received = 0;
const api = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    received += 1;
    held.push(res);
  });
});
let gateway: GatewayServer;
let port = 0;

beforeAll(async () => {
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  gateway = createGateway({
    servingChainPem: cert.chainPem,
    servingKeyPem: cert.privateKeyPem,
    nodeCaPem: bundle.nodeCa.certificatePem,
    apiUrl: `http://127.0.0.1:${(api.address() as AddressInfo).port}`,
    basePath: BASE,
    log: () => {},
    relay: { maxSockets: 2, maxWaiting: 3 },
  });
  await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
  port = (gateway.address() as AddressInfo).port;
});
afterAll(async () => {
  for (const res of held) res.destroy();
  await gateway.shutdown();
  api.closeAllConnections();
  await new Promise((resolve) => api.close(resolve));
});

function post(path: string, body: Buffer) {
  return new Promise<{ status: number; body: string; retryAfter: string | undefined }>((resolve, reject) => {
    const request = https.request(
      {
        host: '127.0.0.1',
        port,
        path: `${BASE}${path}`,
        method: 'POST',
        servername: 'localhost',
        ca: bundle.servingCa.certificatePem,
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            body: Buffer.concat(chunks).toString(),
            retryAfter: response.headers['retry-after'] as string | undefined,
          }),
        );
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

describe('the gateway relay', () => {
  it('answers 503 with retry-after at once past the calls that may wait for a relay socket', async () => {
    const small = Buffer.from('{}');
    const queued = Array.from({ length: 5 }, (_, i) => post(i % 2 ? '/v1/renew' : '/v1/join', small));
    // Two on the API's sockets, three waiting for one.
    await expect.poll(() => gateway.relay.pending, { timeout: 10_000 }).toBe(5);
    await expect.poll(() => received, { timeout: 10_000 }).toBe(2);
    const shed = await Promise.all(Array.from({ length: 6 }, (_, i) => post(i % 2 ? '/v1/renew' : '/v1/join', small)));
    for (const answer of shed) {
      expect(answer.status).toBe(503);
      expect(answer.retryAfter).toBe('2');
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'INVALID_STATE' });
    }
    expect(received).toBe(2);
    // The API answers: the waiting calls go through, and the relay takes calls again.
    const release = setInterval(() => {
      for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    }, 20);
    try {
      expect((await Promise.all(queued)).map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      expect((await post('/v1/join', small)).status).toBe(200);
    } finally {
      clearInterval(release);
    }
    expect(gateway.relay.pending).toBe(0);
  });

  it('refuses an oversized join, renewal or acceptance with the uniform bytes of its path, and relays nothing', async () => {
    const before = received;
    const oversized = Buffer.alloc(MAX_JOIN_BODY_BYTES + 1, 0x20);
    const join = await post('/v1/join', oversized);
    expect([join.status, join.body]).toEqual([JOIN_REFUSED.status, JOIN_REFUSED.body.toString()]);
    const renew = await post('/v1/renew', oversized);
    expect([renew.status, renew.body]).toEqual([RENEW_REFUSED.status, RENEW_REFUSED.body.toString()]);
    const acceptance = await post('/v1/session/acceptance', oversized);
    expect([acceptance.status, acceptance.body]).toEqual([SESSION_REFUSED.status, SESSION_REFUSED.body.toString()]);
    expect(received).toBe(before);
  });
});

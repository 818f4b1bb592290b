import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { createBootServer } from '../boot/http-server';
import { createServices, type Services } from '../boot/services';
import { createGateway, type GatewayServer } from '../gateway/gateway';
import { issueGatewayCertificate } from '../pki/issuance/gateway';
import { fixturePki } from '../../test/pki/fixtures';
import { testDatabaseUrl } from '../../test/db';

const PATH = '/api/compute/.well-known/better-compute';
const opened: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of opened.reverse()) await close();
});

/** A boot server over the test database with a well-known limit of its own; counts the documents it builds. */
async function startApi(wellKnown: { keyPrefix: string; limit: number }) {
  const services: Services = createServices({ databaseUrl: testDatabaseUrl(), endpointLimits: { wellKnown }, pgPoolMax: 4 });
  const built = { count: 0 };
  const server = createBootServer(
    {
      ...services,
      wellKnown: () => {
        built.count += 1;
        return services.wellKnown();
      },
    },
    () => async (_req, res) => void res.writeHead(418).end(),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  opened.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await services.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, built };
}

describe('the well-known document is rate limited per client address', () => {
  it('on the API: exactly the limit across two instances, then 429 with retry-after', async () => {
    const rule = { keyPrefix: `wk-flood-${randomUUID()}`, limit: 15 };
    const [a, b] = [await startApi(rule), await startApi(rule)];
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => fetch(`${(i % 2 ? a : b).url}${PATH}`, { method: i % 4 ? 'GET' : 'HEAD' })),
    );
    const statuses = await Promise.all(answers.map(async (r) => (await r.arrayBuffer(), r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(15);
    expect(statuses.filter((s) => s === 429)).toHaveLength(35);
    const refused = answers.find((r) => r.status === 429)!;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('cache-control')).toBe('no-store');
    expect(a.built.count + b.built.count).toBe(15);
  });

  it('at the gateway: its own per-address limit, and a flood reaches the API as a handful of calls', async () => {
    const api = await startApi({ keyPrefix: `wk-gw-${randomUUID()}`, limit: 1000 });
    const { bundle } = fixturePki();
    const cert = issueGatewayCertificate(bundle, { sans: ['localhost', '127.0.0.1'] });
    const gateway: GatewayServer = createGateway({
      servingChainPem: cert.chainPem,
      servingKeyPem: cert.privateKeyPem,
      nodeCaPem: bundle.nodeCa.certificatePem,
      apiUrl: api.url,
      basePath: '/api/compute',
      log: () => {},
      wellKnownPerAddress: 12,
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    opened.push(() => gateway.shutdown());
    const port = (gateway.address() as AddressInfo).port;
    const get = () =>
      new Promise<{ status: number; retryAfter: string | undefined }>((resolve, reject) => {
        const request = https.get(
          { host: '127.0.0.1', port, path: PATH, servername: 'localhost', ca: bundle.servingCa.certificatePem, agent: false },
          (response: http.IncomingMessage) => {
            response.resume();
            response.on('end', () => resolve({ status: response.statusCode ?? 0, retryAfter: response.headers['retry-after'] as string }));
          },
        );
        request.on('error', reject);
      });
    const answers = await Promise.all(Array.from({ length: 40 }, get));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(12);
    const refused = answers.filter((a) => a.status === 429);
    expect(refused).toHaveLength(28);
    expect(Number(refused[0]!.retryAfter)).toBeGreaterThanOrEqual(1);
    // Twelve documents answered from the gateway's short cache: the API built far fewer (one, unless the
    // cache's few seconds ran out while the flood was under way).
    expect(api.built.count).toBeGreaterThanOrEqual(1);
    expect(api.built.count).toBeLessThan(12);
  });
});

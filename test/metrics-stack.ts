import https from 'node:https';
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { prepareJoinAttempt, type JoinTrust } from '../agent/join';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../agent/keys';
import { postToGateway, type GatewayTarget } from '../agent/renew/gateway-client';
import type { HardwareClaims } from '../protocol/hardware-claims';
import { principalOf, type Principal } from '../server/authz/principal';
import { installPins } from '../server/pki/pins-summary';
import { loadPki } from '../server/pki/bundle/store';
import { reservePort, startTestGateway } from './gateway-process';
import { machineClaims } from './join-harness';
import { parsePrometheusText, type Family } from './prometheus-text';
import { createServerDatabase, defaultPool, newServerSecret, serverTrust, startServerProcess } from './server-process';

/** The compute API's base path on the gateway. */
export const BASE = '/api/compute';

/**
 * The production server (test/server-main.ts) and a gateway process (as npm start runs it), each with a
 * scrape token of its own, for the /metrics tests: how to scrape either, and how to join through the gateway.
 */
export async function startMetricsStack() {
  const secret = newServerSecret();
  const apiToken = `api-scrape-${randomBytes(12).toString('hex')}`;
  const gatewayToken = `gw-scrape-${randomBytes(12).toString('hex')}`;
  const database = await createServerDatabase('metrics_endpoint');
  const server = await startServerProcess({ databaseUrl: database.url, secret, env: { BETTER_COMPUTE_METRICS_TOKEN: apiToken } }).catch(
    async (error: unknown) => {
      await database.close();
      throw error;
    },
  );
  const gatewayPort = await reservePort();
  // The gateway process inherits this process's environment, its scrape token included.
  process.env.BETTER_COMPUTE_METRICS_TOKEN = gatewayToken;
  let gateway: Awaited<ReturnType<typeof startTestGateway>>;
  try {
    gateway = await startTestGateway({ db: database.db, secret, port: gatewayPort, apiUrl: server.url });
  } catch (error) {
    await server.stop();
    await database.close();
    throw error;
  } finally {
    delete process.env.BETTER_COMPUTE_METRICS_TOKEN;
  }
  const bundle = await loadPki(database.db, secret);
  const servingCaPem = bundle.servingCa.certificatePem;
  const target: GatewayTarget & { basePath: string } = {
    gatewayUrl: gateway.url,
    servingCaPin: installPins(bundle).servingCaPin,
    basePath: BASE,
  };
  const trust: JoinTrust = await serverTrust(database.db, secret);
  const pool = await defaultPool(database.db);
  const admin: Principal = principalOf('local', 'metrics-test', [[pool.ownerTenantId, 'admin']]);

  async function scrapeApi(authorization: string | null = `Bearer ${apiToken}`) {
    const response = await fetch(`${server.url}/metrics`, { headers: authorization ? { authorization } : {} });
    return { status: response.status, type: response.headers.get('content-type'), text: await response.text(), headers: response.headers };
  }

  function scrapeGateway(authorization: string | null = `Bearer ${gatewayToken}`): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      https
        .get(
          {
            host: '127.0.0.1',
            port: gatewayPort,
            path: '/metrics',
            ca: servingCaPem,
            servername: 'localhost',
            headers: authorization ? { authorization } : {},
          },
          (res) => {
            let text = '';
            res.on('data', (d: Buffer) => (text += d.toString()));
            res.on('end', () => resolve({ status: res.statusCode!, text }));
          },
        )
        .on('error', reject);
    });
  }

  const parsed = async (): Promise<Map<string, Family>> => {
    const scrape = await scrapeApi();
    expect(scrape.status).toBe(200);
    expect(scrape.type).toMatch(/^text\/plain; version=0\.0\.4/);
    return parsePrometheusText(scrape.text);
  };

  async function join(token: string, options: { keys?: NodeKeyAndCsr; claims?: HardwareClaims; discovery?: boolean } = {}) {
    const keys = options.keys ?? generateNodeKeyAndCsr();
    const claims = options.claims ?? machineClaims();
    const attempt = await prepareJoinAttempt({
      token,
      trust,
      claims,
      keys,
      ...(options.discovery ? { role: 'discovery', attestor: 'discovery' } : {}),
    });
    const reply = await postToGateway(target, undefined, `${BASE}/v1/join`, attempt.body);
    return { status: reply.status, json: JSON.parse(reply.body.toString()), keys, claims };
  }

  return {
    apiToken,
    database,
    gatewayPort,
    target,
    trust,
    pool,
    admin,
    scrapeApi,
    scrapeGateway,
    parsed,
    join,
    async stop() {
      await gateway.stop();
      await server.stop();
      await database.close();
    },
  };
}

import http from 'node:http';
import { expect } from 'vitest';
import { prepareJoinAttempt } from '../agent/join';
import { generateNodeKeyAndCsr } from '../agent/keys';
import { postToGateway, type GatewayTarget } from '../agent/renew/gateway-client';
import type { AddressInfo } from 'node:net';
import { createServices, type Services } from '../server/boot/services';
import { BASE_PATH } from '../server/config/config';
import { normalizedPath } from '../server/boot/http-server';
import { createAgentEndpoints } from '../server/entry/agent-endpoints';
import type { RateLimitRule } from '../server/http/shared-rate-limit';
import { sessionSettings } from '../server/sessions/settings';
import { testDatabaseUrl, testDb } from './db';
import { createTestTenant } from './fixtures';
import { machineClaims, mintToken, refusalsOfTest } from './join-harness';
import { storeJoinedIdentity, verifiedJoinAnswer } from './joined-identity';
import type { RotatingPki } from './rotation-pki';

/** An API process's agent endpoints over services whose PKI is a test's {@link RotatingPki}. */
export interface RotationApi {
  /** The tenant that receives refusals naming no node (the root tenant unless `ownRefusalTenant`). */
  refusalTenantId: string;
  services: Services;
  url: string;
  close(): Promise<void>;
}

/**
 * The agent endpoints (server/entry/agent-endpoints.ts, as the boot server mounts them) on services built by the
 * composition root with `rotating.pki`, on the test database, with rate-limit keys of their own (the gateway
 * credentials limit: `credentialsLimit`, 120 a minute by default). Two calls with one `keyPrefix` share a limit,
 * as two API instances do.
 */
export async function startRotationApi(
  rotating: RotatingPki,
  options: {
    credentialsLimit?: Partial<RateLimitRule>;
    /** Refusals that name no node go to a tenant of this API's own, so a test counts only its own. */
    ownRefusalTenant?: boolean;
  } = {},
): Promise<RotationApi> {
  const { root, keyPrefix, refusalLimits } = await refusalsOfTest(options.ownRefusalTenant);
  const services = createServices({
    databaseUrl: testDatabaseUrl(),
    db: testDb(),
    env: {},
    pgPoolMax: 4,
    pki: rotating.pki,
    rootTenantId: async () => root.id,
    refusalLimits,
    sessionSettings: sessionSettings(1, 2),
    gatewayCredentialsLimit: { keyPrefix: `${keyPrefix}-gateway-credentials`, ...options.credentialsLimit },
  });
  const agent = createAgentEndpoints(services);
  const server = http.createServer((req, res) => {
    if (!agent(req, res, normalizedPath(req.url) ?? ''))
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"code":"NOT_FOUND","message":"Not found"}');
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  return {
    refusalTenantId: root.id,
    services,
    url: `http://127.0.0.1:${port}`,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await services.close();
    },
  };
}

/**
 * Joins a machine through a gateway with the join keys of `rotating` before any rotation (they never rotate in
 * the gateway tests) and writes its identity as an agent keeps it; answers that directory.
 */
export async function joinThroughRotatingGateway(rotating: RotatingPki, target: GatewayTarget): Promise<string> {
  const t = await createTestTenant(testDb());
  const keys = generateNodeKeyAndCsr();
  const crypto = rotating.oldCrypto;
  const trust = {
    encryptionJwk: crypto.encryptionPublicJwk,
    signingCertificateDer: Buffer.from(crypto.signingCertificate, 'base64'),
    signingKeyPin: crypto.signingKeyPin,
  };
  const attempt = await prepareJoinAttempt({ token: (await mintToken(t)).token!, trust, claims: machineClaims(), keys });
  const reply = await postToGateway(target, undefined, `${BASE_PATH}/v1/join`, attempt.body);
  expect(reply.status).toBe(200);
  return storeJoinedIdentity('bc-rotation-agent-', keys, verifiedJoinAnswer(reply.body, trust, keys));
}

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { prepareJoinAttempt } from '../agent/join';
import { generateNodeKeyAndCsr } from '../agent/keys';
import type { IssuedAnswer } from '../agent/verify-answer';
import { postToGateway, type GatewayTarget } from '../agent/renew/gateway-client';
import { createGateway, type GatewayServer } from '../server/gateway/gateway';
import { issueGatewayCertificate } from '../server/pki/issuance/gateway';
import { issueNodeCertificate } from '../server/pki/issuance/node-certificate';
import { installPins } from '../server/pki/pins-summary';
import type { RenewService } from '../server/renew/renew-service';
import { normalizedPath } from '../server/boot/http-server';
import { createAgentEndpoints } from '../server/entry/agent-endpoints';
import { startSessionSweeper, type SessionService } from '../server/sessions/session-service';
import type { SessionSettings } from '../server/sessions/settings';
import type { NewRequestLimits } from '../server/join/request-admission';
import type { HardwareClaims } from '../protocol/hardware-claims';
import { createServices } from '../server/boot/services';
import { loadIdentity } from '../agent/renew/identity';
import { createDiscoveryToken } from '../server/tokens/site-scoped';
import { testDatabaseUrl, testDb } from './db';
import { insertKnownNode, randomMac } from './discovery-harness';
import type { TestTenant } from './fixtures';
import { createJoinHarness, machineClaims, type JoinHarness } from './join-harness';
import { storeJoinedIdentity, verifiedJoinAnswer } from './joined-identity';

export const BASE = '/api/compute';

export interface RenewHarness {
  h: JoinHarness;
  renew: RenewService;
  sessions: SessionService;
  servingCaPin: string;
  gatewayCert: ReturnType<typeof issueGatewayCertificate>;
  /** The API: the agent endpoints (join, renew, the gateway's session calls, the well-known document). */
  api: http.Server;
  apiUrl: string;
  gateway: GatewayServer;
  gatewayLines: string[];
  target: GatewayTarget & { basePath: string };
  /** Starts (or restarts) the gateway on its port. */
  startGateway(): Promise<void>;
  stopGateway(): Promise<void>;
  startApi(): Promise<void>;
  stopApi(): Promise<void>;
  close(): Promise<void>;
}

const listen = (server: http.Server | GatewayServer, port = 0) =>
  new Promise<number>((resolve) => server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
const close = (server: http.Server | GatewayServer) =>
  'shutdown' in server
    ? server.shutdown()
    : new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });

/** A JoinService and RenewService behind an HTTP API, and a real gateway (TLS, mutual TLS) in front of it. */
export async function createRenewHarness(
  options: {
    sessions?: SessionSettings;
    env?: Record<string, string>;
    requestLimits?: Partial<NewRequestLimits>;
    pki?: NonNullable<Parameters<typeof createJoinHarness>[0]>['pki'];
    ownRefusalTenant?: boolean;
    siteAgentLimit?: { limit: number; windowSeconds: number };
  } = {},
): Promise<RenewHarness> {
  const h = await createJoinHarness({
    ownRefusalTenant: options.ownRefusalTenant,
    sessions: options.sessions,
    env: options.env,
    requestLimits: options.requestLimits,
    pki: options.pki,
    siteAgentLimit: options.siteAgentLimit,
  });
  const { renew, sessions } = h.services;
  const servingCaPin = installPins(h.bundle).servingCaPin;
  const stopSweeper = startSessionSweeper(sessions);
  // The API is the agent endpoints' own handler (server/entry/agent-endpoints.ts), as the boot server mounts it.
  const agent = createAgentEndpoints(h.services);
  const makeApi = () =>
    http.createServer((req, res) => {
      if (!agent(req, res, normalizedPath(req.url) ?? ''))
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"code":"NOT_FOUND","message":"Not found"}');
    });
  let api = makeApi();
  const apiPort = await listen(api);
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const gatewayCert = issueGatewayCertificate(h.bundle, { sans: ['localhost', '127.0.0.1'] });
  const gatewayLines: string[] = [];
  const makeGateway = () =>
    createGateway({
      servingChainPem: gatewayCert.chainPem,
      servingKeyPem: gatewayCert.privateKeyPem,
      nodeCaPem: h.bundle.nodeCa.certificatePem,
      apiUrl,
      basePath: BASE,
      log: (line) => gatewayLines.push(line),
    });
  let gateway = makeGateway();
  const gatewayPort = await listen(gateway);
  const harness: RenewHarness = {
    h,
    renew,
    sessions,
    servingCaPin,
    gatewayCert,
    api,
    apiUrl,
    gateway,
    gatewayLines,
    target: { gatewayUrl: `https://127.0.0.1:${gatewayPort}`, servingCaPin, basePath: BASE },
    async startGateway() {
      gateway = makeGateway();
      harness.gateway = gateway;
      await listen(gateway, gatewayPort);
    },
    stopGateway: () => close(gateway),
    async startApi() {
      api = makeApi();
      harness.api = api;
      await listen(api, apiPort);
    },
    stopApi: () => close(api),
    async close() {
      stopSweeper();
      await close(gateway).catch(() => {});
      await close(api).catch(() => {});
      await h.services.close();
      await Promise.all([...agentDirs].map((dir) => rm(dir, { recursive: true, force: true })));
      agentDirs.clear();
    },
  };
  return harness;
}

/** A gateway like the harness's (its serving chain and node CA) in front of `apiUrl`, listening; and its target. */
export async function anotherGateway(r: RenewHarness, apiUrl = r.apiUrl) {
  const gateway = createGateway({
    servingChainPem: r.gatewayCert.chainPem,
    servingKeyPem: r.gatewayCert.privateKeyPem,
    nodeCaPem: r.h.bundle.nodeCa.certificatePem,
    apiUrl,
    basePath: BASE,
    log: () => {},
  });
  return { gateway, target: { ...r.target, gatewayUrl: `https://127.0.0.1:${await listen(gateway)}` } };
}

/**
 * A second API instance as a second process has it (its own services and pg pool, on the harness's database
 * and keys) and a gateway of its own in front of it.
 */
export async function secondInstance(r: RenewHarness, options: { pgPoolMax: number; sessionSettings: SessionSettings }) {
  const services = createServices({
    databaseUrl: testDatabaseUrl(),
    db: testDb(),
    env: {},
    pgPoolMax: options.pgPoolMax,
    pki: r.h.services.pki,
    rootTenantId: async () => r.h.rootTenantId,
    sessionSettings: options.sessionSettings,
  });
  const agent = createAgentEndpoints(services);
  const api = http.createServer((req, res) => {
    if (!agent(req, res, normalizedPath(req.url) ?? '')) res.writeHead(404).end();
  });
  const { gateway, target } = await anotherGateway(r, `http://127.0.0.1:${await listen(api)}`);
  return {
    services,
    gateway,
    target,
    async close() {
      await gateway.shutdown();
      await close(api);
      await services.close();
    },
  };
}

/** A node certificate for `spki` issued by the harness's node CA and recorded in node_certs, as an admitted join's. */
export async function issueRecordedCertificate(
  r: RenewHarness,
  answer: { siteId: string; nodeId: string },
  spki: Buffer,
  validity: { notBefore: Date; ttlSeconds: number },
  extraUris: string[] = [],
) {
  const cert = issueNodeCertificate(r.h.crypto.nodeCa, {
    publicKeySpkiDer: spki,
    trustDomain: r.h.crypto.trustDomain,
    siteId: answer.siteId,
    nodeId: answer.nodeId,
    role: 'node',
    ...validity,
    extraUris,
  });
  await testDb().nodeCert.create({
    data: {
      serial: cert.serialHex,
      nodeId: answer.nodeId,
      identityGeneration: 1,
      role: 'node',
      spkiSha256: new Uint8Array(createHash('sha256').update(spki).digest()),
      der: new Uint8Array(cert.der),
      notBefore: cert.notBefore,
      notAfter: cert.notAfter,
    },
  });
  return cert;
}

/** The identity directories {@link joinThroughGateway} made; a harness's close removes them. */
const agentDirs = new Set<string>();

/**
 * Joins a machine through the gateway (no client certificate, as a join has none) and stores its identity in
 * a new directory (the same `claims` again reclaim the machine's node). Returns the directory and the verified answer.
 */
export async function joinThroughGateway(
  r: RenewHarness,
  token: string,
  claims: HardwareClaims = machineClaims(),
  options: { role?: string; attestor?: string; expectedRole?: string } = {},
): Promise<{ dir: string; answer: IssuedAnswer }> {
  const keys = generateNodeKeyAndCsr();
  const attempt = await prepareJoinAttempt({ token, trust: r.h.trust, claims, keys, role: options.role, attestor: options.attestor });
  const reply = await postToGateway(r.target, undefined, `${BASE}/v1/join`, attempt.body);
  if (reply.status !== 200) throw new Error(`join through the gateway answered ${reply.status}: ${reply.body}`);
  const answer = verifiedJoinAnswer(reply.body, r.h.trust, keys, options.expectedRole);
  const dir = await storeJoinedIdentity('bc-agent-', keys, answer);
  agentDirs.add(dir);
  return { dir, answer };
}

/** A PXE ramdisk admitted at once (its bound MAC is a node's of `t`'s site), joined through the gateway. */
export async function joinedRamdisk(r: RenewHarness, t: TestTenant) {
  const mac = randomMac();
  await insertKnownNode(t, { macs: [mac] });
  const created = await createDiscoveryToken(testDb(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 });
  const { dir, answer } = await joinThroughGateway(r, created.token!, machineClaims({ macs: [mac] }), {
    role: 'discovery',
    attestor: 'discovery',
    expectedRole: 'ramdisk',
  });
  return { dir, answer, id: await loadIdentity(dir) };
}

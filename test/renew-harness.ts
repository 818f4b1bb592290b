import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { prepareJoinAttempt } from '../agent/join';
import { writeIdentity } from '../agent/identity-store';
import { generateNodeKeyAndCsr } from '../agent/keys';
import { verifyJoinAnswer, type IssuedAnswer } from '../agent/verify-answer';
import { postToGateway, type GatewayTarget } from '../agent/renew/gateway-client';
import { createGateway, type GatewayServer } from '../server/gateway/gateway';
import { issueGatewayCertificate } from '../server/pki/gateway';
import { installPins } from '../server/pki/pins-summary';
import { RenewService } from '../server/renew/renew-service';
import { PEER_HEADER, VOUCH_HEADER } from '../server/renew/vouch';
import { SessionService, startSessionSweeper } from '../server/sessions/session-service';
import { sessionSettings, type SessionSettings } from '../server/sessions/settings';
import { SESSION_ACCEPTANCE_PATH, SESSION_LEASE_PATH, SESSION_PATH, SESSION_REFUSED, SESSION_WATCH_PATH } from '../protocol/session-wire';
import { pipeWatchResponse, sessionWatchResponse, SessionsListener } from '../server/sessions/session-watch';
import type { HardwareClaims } from '../protocol/hardware-claims';
import { createJoinHarness, machineClaims, type JoinHarness } from './join-harness';
import { testDatabaseUrl } from './db';

export const BASE = '/api/compute';

export interface RenewHarness {
  h: JoinHarness;
  renew: RenewService;
  sessions: SessionService;
  servingCaPin: string;
  gatewayCert: ReturnType<typeof issueGatewayCertificate>;
  /** The API: join and renew, as the boot server's fast path serves them. */
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

function readAll(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** A JoinService and RenewService behind an HTTP API, and a real gateway (TLS, mutual TLS) in front of it. */
export async function createRenewHarness(options: { ttlSeconds?: number; sessions?: SessionSettings } = {}): Promise<RenewHarness> {
  const h = await createJoinHarness();
  const servingCaPin = installPins(h.bundle).servingCaPin;
  const renew = new RenewService({
    pool: h.pool,
    loadRuntime: async () => ({ crypto: h.crypto, servingCaPin }),
    loadRootTenantId: async () => h.rootTenantId,
    refusalLimit: { limit: 1000, window: '60 seconds', keyPrefix: `${h.keyPrefix}-renew` },
    certTtlSeconds: options.ttlSeconds,
  });
  // Short heartbeats and grace by default, so the tests see them within seconds.
  const sessions = new SessionService({
    pool: h.pool,
    loadRuntime: async () => ({ crypto: h.crypto, servingCaPin }),
    loadRootTenantId: async () => h.rootTenantId,
    refusalLimit: { limit: 1000, window: '60 seconds', keyPrefix: `${h.keyPrefix}-session` },
    settings: options.sessions ?? sessionSettings(1, 2),
  });
  const stopSweeper = startSessionSweeper(sessions);
  const sessionsListener = new SessionsListener(testDatabaseUrl());
  const makeApi = () =>
    http.createServer((req, res) => void handleApi(req, res).catch((error: unknown) => res.destroy(error as Error)));
  const handleApi = async (req: http.IncomingMessage, res: http.ServerResponse) => {
      const body = await readAll(req);
      const header = (name: string) => (typeof req.headers[name] === 'string' ? (req.headers[name] as string) : undefined);
      const call = { body, vouch: header(VOUCH_HEADER), peer: header(PEER_HEADER), path: req.url ?? '' };
      // The well-known document's join section, which the gateway relays (an agent reads the welcome's key there).
      if (req.method === 'GET' && req.url === `${BASE}/.well-known/better-compute`) {
        const doc = JSON.stringify({ join: { signingCertificate: Buffer.from(h.trust.signingCertificateDer).toString('base64'), signingKeyPin: h.trust.signingKeyPin } });
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(doc);
      }
      if (req.url === `${BASE}${SESSION_WATCH_PATH}`) {
        const gatewayId = await sessions.authorizeWatch(call);
        if (gatewayId) return pipeWatchResponse(sessionWatchResponse(sessionsListener, gatewayId), res);
        return void res.writeHead(SESSION_REFUSED.status, { 'content-type': 'application/json' }).end(SESSION_REFUSED.body);
      }
      const answer =
        req.url === `${BASE}/v1/join`
          ? await h.service.joinBody(body)
          : req.url === `${BASE}${SESSION_PATH}`
            ? await sessions.hello(call)
            : req.url === `${BASE}${SESSION_LEASE_PATH}`
              ? await sessions.lease(call)
              : req.url === `${BASE}${SESSION_ACCEPTANCE_PATH}`
                ? await sessions.acceptance(call)
              : await renew.renew({ ...call, path: `${BASE}/v1/renew` });
      res.writeHead(answer.status, { 'content-type': 'application/json', 'content-length': answer.body.length }).end(answer.body);
  };
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
      await sessionsListener.close();
      await close(api).catch(() => {});
      await h.pool.end();
    },
  };
  return harness;
}

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
  const answer = verifyJoinAnswer(JSON.parse(reply.body.toString()), {
    signingKeyPin: r.h.trust.signingKeyPin,
    signingCertificateDer: r.h.trust.signingCertificateDer,
    csrSha256: keys.csrSha256,
    publicKeySpkiDer: keys.spkiDer,
    expectedRole: options.expectedRole ?? 'node',
  }) as IssuedAnswer;
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-agent-'));
  await writeIdentity(dir, {
    privateKeyPem: keys.privateKeyPem,
    certificateChain: answer.certificateChain,
    nodeId: answer.nodeId,
    siteId: answer.siteId,
    trustDomain: answer.trustDomain,
    role: answer.role,
  });
  return { dir, answer };
}

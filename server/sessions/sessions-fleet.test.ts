import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt, type JoinTrust } from '../../agent/join';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { postToGateway, type GatewayTarget } from '../../agent/renew/gateway-client';
import { loadIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import { openSession, type AgentSession } from '../../agent/session/session-client';
import { spawnGateway, type SpawnedGateway } from '../../test/gateway-process';
import { machineClaims } from '../../test/join-harness';
import { storeJoinedIdentity, verifiedJoinAnswer } from '../../test/joined-identity';
import { defaultPool, newServerSecret, startServedDatabase, type ServerDatabase, type ServerProcess } from '../../test/server-process';
import { insertApiKey } from '../api-keys/api-keys';
import { issueGatewayCertificate } from '../pki/issuance/gateway';
import { installPins } from '../pki/pins-summary';
import { loadPki } from '../pki/bundle/store';
import { issueJoinToken } from '../tokens/issue';
import { voucherFromServingChain } from '../gateway/gateway';
import { vouchHeaders, type GatewayVoucher } from '../vouching/vouch';
import { revokeNodeIdentity } from '../nodes/lifecycle';
import { principalOf } from '../authz/principal';

// Two gateway processes and two API processes on one PostgreSQL: every instance reads the same session state,
// and a gateway that dies leaves its nodes connected for no longer than its lease, then disconnected after
// the grace (3 s here, heartbeats every second).

const BASE = '/api/compute';
const secret = newServerSecret();
let database: ServerDatabase;
const apis: ServerProcess[] = [];
const gateways: SpawnedGateway[] = [];
let trust: JoinTrust;
let signingKey: X509Certificate['publicKey'];
let servingCaPin: string;
let apiKey: string;
let tenantId: string;
let token: string;
let voucher: GatewayVoucher;

beforeAll(async () => {
  const env = { BETTER_COMPUTE_SESSION_HEARTBEAT_SECONDS: '1', BETTER_COMPUTE_SESSION_GRACE_SECONDS: '3' };
  const served = await startServedDatabase('sessions_fleet', secret, { count: 2, env });
  ({ database, trust } = served);
  apis.push(...served.servers);
  signingKey = new X509Certificate(trust.signingCertificateDer).publicKey;
  const bundle = await loadPki(database.db, secret);
  servingCaPin = installPins(bundle).servingCaPin;
  const cert = issueGatewayCertificate(bundle, { sans: ['localhost', '127.0.0.1'] });
  const credentials = { chainPem: cert.chainPem, keyPem: cert.privateKeyPem, nodeCaPem: bundle.nodeCa.certificatePem };
  voucher = voucherFromServingChain(cert.chainPem, cert.privateKeyPem);
  for (const api of apis) gateways.push(await spawnGateway({ credentials, apiUrl: api.url }));
  const pool = await defaultPool(database.db);
  tenantId = pool.ownerTenantId;
  apiKey = (await insertApiKey(database.db, { tenantId, role: 'viewer', name: 'fleet-viewer' }, 'test:sessions-fleet')).key;
  token = (
    await issueJoinToken(database.db, {
      tenantId,
      poolId: pool.id,
      siteId: pool.siteId,
      role: 'node',
      ttlSeconds: 3600,
      maxUses: 10,
      createdBy: 'test:sessions-fleet',
    })
  ).token!;
}, 180_000);

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
  await Promise.all(apis.map((a) => a.stop()));
  await database?.close();
});

const targetOf = (g: SpawnedGateway): GatewayTarget => ({ gatewayUrl: g.url, servingCaPin });

async function joinVia(g: SpawnedGateway): Promise<LoadedIdentity> {
  const keys = generateNodeKeyAndCsr();
  const attempt = await prepareJoinAttempt({ token, trust, claims: machineClaims(), keys });
  const reply = await postToGateway(targetOf(g), undefined, `${BASE}/v1/join`, attempt.body);
  expect(reply.status).toBe(200);
  return loadIdentity(await storeJoinedIdentity('bc-fleet-', keys, verifiedJoinAnswer(reply.body, trust, keys)));
}

/** What one API instance says about the node's session (REST `nodes.get`). */
async function sessionSeenBy(api: ServerProcess, nodeId: string) {
  const answer = await fetch(`${api.url}${BASE}/v1/tenants/${tenantId}/nodes/${nodeId}`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  expect(answer.status).toBe(200);
  return (
    (await answer.json()) as {
      session: { connected: boolean; gatewayId: string | null; since: string | null; lastHeartbeat: string | null };
    }
  ).session;
}

async function connectedIdsSeenBy(api: ServerProcess) {
  const answer = await fetch(`${api.url}${BASE}/v1/tenants/${tenantId}/nodes?connected=true&limit=500`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  expect(answer.status).toBe(200);
  return ((await answer.json()) as { items: Array<{ id: string }> }).items.map((n) => n.id).sort();
}

async function eventTypes(nodeId: string) {
  const events = await database.db.event.findMany({
    where: { tenantId, type: { in: ['node.connected', 'node.disconnected'] } },
    orderBy: { id: 'asc' },
  });
  return events.filter((e) => (e.data as { nodeId?: string }).nodeId === nodeId).map((e) => e.type);
}

describe('two gateways and two API instances on one PostgreSQL', () => {
  it(
    "agree on who is connected, through which gateway; a killed gateway's nodes are disconnected after the grace",
    { timeout: 90_000 },
    async () => {
      const a = await joinVia(gateways[0]!);
      const b = await joinVia(gateways[1]!);
      const idle = await joinVia(gateways[0]!);
      const sessions: AgentSession[] = [];
      sessions.push(await openSession(targetOf(gateways[0]!), a, { basePath: BASE, agentVersion: '0.1.0', signingKey }));
      sessions.push(await openSession(targetOf(gateways[1]!), b, { basePath: BASE, agentVersion: '0.1.0', signingKey }));
      const nodeA = a.identity.nodeId;
      const nodeB = b.identity.nodeId;

      const expected = [nodeA, nodeB].sort();
      for (const api of apis) {
        expect(await connectedIdsSeenBy(api)).toEqual(expected);
        const seenA = await sessionSeenBy(api, nodeA);
        const seenB = await sessionSeenBy(api, nodeB);
        expect(seenA.connected && seenB.connected).toBe(true);
        expect(seenA.gatewayId).not.toBe(seenB.gatewayId);
        expect(await sessionSeenBy(api, idle.identity.nodeId)).toEqual({
          connected: false,
          since: null,
          lastHeartbeat: null,
          gatewayId: null,
        });
      }
      expect((await sessionSeenBy(apis[0]!, nodeA)).gatewayId).toBe((await sessionSeenBy(apis[1]!, nodeA)).gatewayId);
      // The heartbeat moves on (the gateway's lease is renewed every two seconds here).
      const firstBeat = (await sessionSeenBy(apis[1]!, nodeA)).lastHeartbeat!;
      await expect.poll(async () => (await sessionSeenBy(apis[1]!, nodeA)).lastHeartbeat! > firstBeat, { timeout: 6_000 }).toBe(true);

      // Gateway B dies without a word (SIGKILL): nobody reports B's session closed; its lease runs out instead.
      const killedAt = Date.now();
      await gateways[1]!.stop('SIGKILL');
      await sessions[1]!.ended;
      await expect.poll(() => connectedIdsSeenBy(apis[0]!), { timeout: 15_000, interval: 250 }).toEqual([nodeA]);
      const disconnectedAfter = Date.now() - killedAt;
      expect(await connectedIdsSeenBy(apis[1]!)).toEqual([nodeA]);
      // At most the lease (3 s: never longer than the grace) and a poll's slack.
      expect(disconnectedAfter).toBeLessThan(6_000);
      await expect.poll(() => eventTypes(nodeB), { timeout: 15_000, interval: 250 }).toEqual(['node.connected', 'node.disconnected']);
      expect(await eventTypes(nodeA)).toEqual(['node.connected']);

      // B comes back through gateway A (served by the other API instance): connected again, once more published.
      sessions.push(await openSession(targetOf(gateways[0]!), b, { basePath: BASE, agentVersion: '0.1.0', signingKey }));
      for (const api of apis) expect(await connectedIdsSeenBy(api)).toEqual(expected);
      expect(await eventTypes(nodeB)).toEqual(['node.connected', 'node.disconnected', 'node.connected']);
      for (const s of sessions) s.close();
    },
  );

  it(
    'an API process streams a gateway its session-end announcements (watch), and refuses an unvouched watch',
    { timeout: 60_000 },
    async () => {
      const node = await joinVia(gateways[0]!);
      const session = await openSession(targetOf(gateways[0]!), node, { basePath: BASE, agentVersion: '0.1.0', signingKey });
      const { gatewayId } = await database.db.nodeSession.findFirstOrThrow({ where: { nodeId: node.identity.nodeId } });
      const path = `${BASE}/v1/session/watch`;
      const body = Buffer.from(JSON.stringify({ gatewayId }));
      const direct = await fetch(`${apis[1]!.url}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
      expect(direct.status).toBe(403);
      expect(await direct.text()).toBe('{"code":"ACCESS_DENIED","message":"Session refused"}');

      // The other API instance (not the one gateway A relays to), watched for gateway A's id.
      const controller = new AbortController();
      const watch = await fetch(`${apis[1]!.url}${path}`, {
        method: 'POST',
        body,
        signal: controller.signal,
        headers: { ...vouchHeaders(voucher, null, body, path), 'content-type': 'application/json' },
      });
      expect(watch.status).toBe(200);
      expect(watch.headers.get('content-type')).toBe('text/event-stream');
      const reader = watch.body!.pipeThrough(new TextDecoderStream()).getReader();
      const types: string[] = [];
      const until = async (type: string) => {
        let text = '';
        while (!types.includes(type)) {
          const { value, done } = await reader.read();
          if (done) break;
          text += value;
          const events = text.split('\n\n');
          text = events.pop()!;
          for (const event of events) for (const line of event.split('\n')) if (line.startsWith('event: ')) types.push(line.slice(7));
        }
      };
      await until('ready');
      await revokeNodeIdentity(database.db, principalOf('operator', 'op_fleet_test', [[tenantId, 'operator']]), {
        tenantId,
        nodeId: node.identity.nodeId,
      });
      await until('refresh');
      expect(types).toEqual(['ready', 'refresh']);
      await session.ended;
      controller.abort();
    },
  );
});

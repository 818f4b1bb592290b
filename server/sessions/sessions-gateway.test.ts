import http from 'node:http';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { connectGateway } from '../../agent/renew/gateway-client';
import type { LoadedIdentity } from '../../agent/renew/identity';
import { buildRenewBody, checkRenewedAnswer } from '../../agent/renew/renew';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import type { AgentSession } from '../../agent/session/session-client';
import { SseReader } from '../../agent/session/sse';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { nodeCredentials } from '../../test/node-connection';
import { BASE, type RenewHarness } from '../../test/renew-harness';
import { joinedThroughGateway, openAgentSession, useRenewHarness } from '../../test/session-harness';
import { getNode, listNodes } from '../nodes/nodes';
import { countPools } from '../pools/counts';

// Sessions through a real gateway (TLS, mutual TLS, HTTP/2 and HTTP/1.1) in front of a real HTTP API on the
// test PostgreSQL: heartbeats every second and a grace of two seconds (sessionSettings(1, 2)). How sessions
// end and which Hellos are refused: sessions-ending.test.ts.

let r: RenewHarness;
let signingKey: KeyObject;
useRenewHarness((created) => ({ r, signingKey } = created));

const open = (identity: LoadedIdentity, onEvent?: (type: string) => void) => openAgentSession(r, signingKey, identity, onEvent);
const joined = (t: TestTenant) => joinedThroughGateway(r, t);

async function eventsOf(t: TestTenant, nodeId: string, types: string[]) {
  const events = await testDb().event.findMany({ where: { tenantId: t.tenantId, type: { in: types } }, orderBy: { id: 'asc' } });
  return events.filter((e) => (e.data as { nodeId?: string }).nodeId === nodeId);
}
const CONNECTION = ['node.connected', 'node.disconnected'];

/** Whether the node has a session whose gateway's lease is live, as every instance reads it. */
async function isConnected(nodeId: string) {
  const rows = await testDb().$queryRaw<Array<{ n: number }>>`
    SELECT count(*)::int AS n FROM node_sessions s JOIN gateway_leases g ON g.gateway_id = s.gateway_id
     WHERE s.node_id = ${nodeId} AND g.expires_at > now()`;
  return rows[0]!.n > 0;
}

describe('a session over HTTP/2', () => {
  it('is welcomed (signed), connected once welcomed, publishes node.connected once, and heartbeats arrive', async () => {
    const t = await createTestTenant(testDb());
    const { nodeId, identity } = await joined(t);
    const beats: number[] = [];
    const session = await open(identity, (type) => type === 'heartbeat' && beats.push(performance.now()));
    expect(session.welcome).toMatchObject({ status: 'welcome', nodeId, heartbeatSeconds: 1 });
    expect(session.welcome.sessionId).toMatch(/^sess_/);
    expect(Math.abs(session.welcome.serverTime - Date.now() / 1000)).toBeLessThan(5);
    expect(await isConnected(nodeId)).toBe(true);
    const row = await testDb().nodeSession.findUniqueOrThrow({ where: { id: session.welcome.sessionId } });
    expect(row).toMatchObject({ nodeId, agentVersion: '0.1.0-test' });
    expect((await testDb().node.findUniqueOrThrow({ where: { id: nodeId } })).connectedSince).not.toBeNull();

    await expect.poll(() => beats.length, { timeout: 5_000 }).toBeGreaterThanOrEqual(2);

    // What the console reads: the node's session, the connected filter and the pool's count.
    const other = await joined(t);
    const detail = await getNode(testDb(), t.viewer, { tenantId: t.tenantId, nodeId });
    expect(detail.session).toMatchObject({ connected: true, gatewayId: r.gateway.sessions.id });
    expect(Date.parse(detail.session.lastHeartbeat!)).toBeGreaterThan(Date.now() - 5_000);
    expect((await getNode(testDb(), t.viewer, { tenantId: t.tenantId, nodeId: other.nodeId })).session).toEqual({
      connected: false,
      since: null,
      lastHeartbeat: null,
      gatewayId: null,
    });
    const list = (connected: boolean) =>
      listNodes(testDb(), t.viewer, { tenantId: t.tenantId, connected, limit: 100 }).then((p) => p.items.map((n) => n.id));
    expect(await list(true)).toEqual([nodeId]);
    expect(await list(false)).toEqual([other.nodeId]);
    expect((await countPools(testDb(), t.viewer, { tenantId: t.tenantId })).items[0]).toMatchObject({
      poolId: t.pool.id,
      connectedNodes: 1,
    });

    const events = await eventsOf(t, nodeId, CONNECTION);
    expect(events.map((e) => e.type)).toEqual(['node.connected']);
    expect(events[0]!.data).toMatchObject({ nodeId, poolId: t.pool.id, siteId: t.site.id, sessionId: session.welcome.sessionId });
    session.close();
  });

  it('an agent that goes away publishes node.disconnected after the grace; a quick reconnect publishes nothing', async () => {
    const t = await createTestTenant(testDb());
    const { nodeId, identity } = await joined(t);
    const first = await open(identity);
    // A quick reconnect: the first connection dies (as a killed agent's does) and the agent is back at once.
    first.close();
    await first.ended;
    const second = await open(identity);
    await new Promise((resolve) => setTimeout(resolve, 4_500));
    expect((await eventsOf(t, nodeId, CONNECTION)).map((e) => e.type)).toEqual(['node.connected']);
    expect(await isConnected(nodeId)).toBe(true);

    // Killed for good: after the report (at most one lease refresh, 2 s here) and the grace (2 s).
    const killedAt = Date.now();
    second.close();
    await expect
      .poll(async () => (await eventsOf(t, nodeId, CONNECTION)).map((e) => e.type), { timeout: 15_000, interval: 200 })
      .toEqual(['node.connected', 'node.disconnected']);
    const [, disconnected] = await eventsOf(t, nodeId, CONNECTION);
    expect(disconnected!.createdAt.getTime() - killedAt).toBeGreaterThanOrEqual(2_000);
    expect(await isConnected(nodeId)).toBe(false);
    expect((await testDb().node.findUniqueOrThrow({ where: { id: nodeId } })).connectedSince).toBeNull();
    // It stays published once.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect((await eventsOf(t, nodeId, CONNECTION)).map((e) => e.type)).toEqual(['node.connected', 'node.disconnected']);
  });

  it("a renewal on the session's connection opens no new TLS connection and is decided as any renewal", async () => {
    const t = await createTestTenant(testDb());
    const { identity } = await joined(t);
    const session: AgentSession = await open(identity);
    const before = r.gateway.stats.tlsConnections;
    for (let i = 0; i < 3; i++) {
      const next = generateNodeKeyAndCsr();
      const reply = await session.post(
        `${BASE}/v1/renew`,
        buildRenewBody(identity, next.csrDer, next.csrSha256, Math.floor(Date.now() / 1000)),
      );
      expect(reply.status).toBe(200);
      expect(() => checkRenewedAnswer(identity, reply.body, next.spkiDer, next.csrSha256)).not.toThrow();
    }
    expect(r.gateway.stats.tlsConnections).toBe(before);
    session.close();
  });
});

describe('a session with curl over HTTP/2 (nghttp2, a client that is not ours)', () => {
  it('negotiates h2, gets 200 text/event-stream, the signed welcome and heartbeats', async () => {
    const t = await createTestTenant(testDb());
    const { dir, nodeId, identity } = await joined(t);
    const certFile = path.join(dir, 'leaf.pem');
    const caFile = path.join(dir, 'serving-ca.pem');
    await writeFile(certFile, identity.leaf.toString());
    await writeFile(caFile, r.h.bundle.servingCa.certificatePem);
    // curl ends the stream after --max-time (exit 28): what it printed until then is the stream.
    const result = await promisify(execFile)('curl', [
      '-sS',
      '--http2',
      '-N',
      '--max-time',
      '3',
      '-D',
      '-',
      '--cert',
      certFile,
      '--key',
      path.join(dir, 'node.key'),
      '--cacert',
      caFile,
      '-H',
      'content-type: application/json',
      '--data-binary',
      JSON.stringify({ nodeId, agentVersion: 'curl' }),
      `${r.target.gatewayUrl.replace('127.0.0.1', 'localhost')}${BASE}/v1/session`,
    ]).catch((error: { stdout: string; code: number }) => ({ stdout: error.stdout, code: error.code }));
    expect(result.stdout).toMatch(/^HTTP\/2 200 ?\r\n/);
    expect(result.stdout).toMatch(/content-type: text\/event-stream/);
    const events = new SseReader().push(result.stdout.slice(result.stdout.indexOf('\r\n\r\n') + 4));
    expect(events[0]!.type).toBe('welcome');
    const welcome = JSON.parse(Buffer.from((events[0]!.data as { body: string }).body, 'base64url').toString());
    expect(welcome).toMatchObject({ status: 'welcome', nodeId, heartbeatSeconds: 1 });
    expect(events.filter((e) => e.type === 'heartbeat').length).toBeGreaterThanOrEqual(1);
  });
});

describe('a session over HTTP/1.1', () => {
  it('gets the same welcome and heartbeats', async () => {
    const t = await createTestTenant(testDb());
    const { nodeId, identity } = await joined(t);
    const socket = await connectGateway(r.target, nodeCredentials(identity));
    expect(socket.alpnProtocol).toBe('http/1.1');
    // An agent that holds the server's trust set (version 1 here): no `trust` event between them.
    const body = JSON.stringify({ nodeId, agentVersion: '0.1.0', trustVersion: 1 });
    const types = await new Promise<string[]>((resolve, reject) => {
      const request = http.request(
        {
          method: 'POST',
          path: `${BASE}/v1/session`,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          createConnection: () => socket,
        },
        (response) => {
          if (response.statusCode !== 200 || response.headers['content-type'] !== 'text/event-stream')
            reject(new Error(`answered ${response.statusCode} ${response.headers['content-type']}`));
          const reader = new SseReader();
          const seen: string[] = [];
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            seen.push(...reader.push(chunk).map((e) => e.type));
            if (seen.length >= 3) {
              resolve(seen);
              socket.destroy();
            }
          });
        },
      );
      request.on('error', reject);
      request.end(body);
    });
    expect(types).toEqual(['welcome', 'heartbeat', 'heartbeat']);
  });
});

import http2 from 'node:http2';
import http from 'node:http';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { chainToPem, connectGateway } from '../../agent/renew/gateway-client';
import { loadIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import { buildRenewBody, checkRenewedAnswer } from '../../agent/renew/renew';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { openSession, SessionRefusedError, type AgentSession } from '../../agent/session/session-client';
import { SseReader } from '../../agent/session/sse';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { machineClaims, mintToken } from '../../test/join-harness';
import { BASE, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { useRenewHarness } from '../../test/session-harness';
import { deleteNode, revokeNodeIdentity, setCordon } from '../nodes/lifecycle';
import { getNode, listNodes } from '../nodes/nodes';
import { countPools } from '../pools/counts';
import { SESSION_REFUSED } from '../../protocol/session-wire';

// Sessions through a real gateway (TLS, mutual TLS, HTTP/2 and HTTP/1.1) in front of a real HTTP API on the
// test PostgreSQL: heartbeats every second and a grace of two seconds (sessionSettings(1, 2)).

let r: RenewHarness;
let signingKey: KeyObject;
useRenewHarness((created) => ({ r, signingKey } = created));

const open = (identity: LoadedIdentity, onEvent?: (type: string) => void) =>
  openSession(r.target, identity, { basePath: BASE, agentVersion: '0.1.0-test', signingKey, onEvent: (e) => onEvent?.(e.type) });

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

async function joined(t: TestTenant, claims = machineClaims()) {
  const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!, claims);
  return { dir, nodeId: answer.nodeId, identity: await loadIdentity(dir) };
}

/** A Hello sent by hand over HTTP/2: status, content type and body bytes (a refusal must be the same bytes). */
async function rawHello(identity: LoadedIdentity | null, body: string) {
  const socket = await connectGateway(
    r.target,
    identity
      ? { keyPem: identity.identity.privateKeyPem, certificatePem: chainToPem([identity.identity.certificateChain[0]!]) }
      : undefined,
    10_000,
    ['h2'],
  );
  const connection = http2.connect(r.target.gatewayUrl, { createConnection: () => socket });
  try {
    return await new Promise<{ status: number; type: string; body: Buffer }>((resolve, reject) => {
      const stream = connection.request({ ':method': 'POST', ':path': `${BASE}/v1/session`, 'content-type': 'application/json' });
      const chunks: Buffer[] = [];
      let head: http2.IncomingHttpHeaders = {};
      stream.on('response', (headers) => (head = headers));
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => resolve({ status: Number(head[':status']), type: String(head['content-type']), body: Buffer.concat(chunks) }));
      stream.on('error', reject);
      stream.end(body);
    });
  } finally {
    connection.destroy();
  }
}

async function refusalsOf(reason: string, nodeId: string | null) {
  const events = await testDb().event.findMany({ where: { type: 'security.session.refused' }, orderBy: { id: 'desc' }, take: 50 });
  return events.filter(
    (e) => (e.data as { reason?: string }).reason === reason && (nodeId === null || (e.data as { nodeId?: string }).nodeId === nodeId),
  );
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

  it('revokeIdentity ends the session within seconds, and the next Hello is refused with the uniform bytes', async () => {
    const t = await createTestTenant(testDb());
    const { nodeId, identity } = await joined(t);
    const session = await open(identity);
    const revokedAt = performance.now();
    await revokeNodeIdentity(testDb(), t.operator, { tenantId: t.tenantId, nodeId });
    await session.ended;
    expect(performance.now() - revokedAt).toBeLessThan(5_000);

    await expect(open(identity)).rejects.toBeInstanceOf(SessionRefusedError);
    const raw = await rawHello(identity, JSON.stringify({ nodeId, agentVersion: '0.1.0' }));
    expect(raw).toEqual({ status: 403, type: 'application/json', body: SESSION_REFUSED.body });
    expect(raw.body.toString()).toBe('{"code":"ACCESS_DENIED","message":"Session refused"}');
    expect((await refusalsOf('revoked', nodeId)).length).toBeGreaterThanOrEqual(1);
  });

  it('a certificate that expires ends its session within seconds', async () => {
    const t = await createTestTenant(testDb());
    const { nodeId, identity } = await joined(t);
    const session = await open(identity);
    // As if its lifetime ran out now (the gateway also ends it at notAfter by its own timer).
    const expiredAt = performance.now();
    await testDb().nodeCert.update({
      where: { serial: identity.leaf.serialNumber.toLowerCase() },
      data: { notAfter: new Date(Date.now() - 1_000) },
    });
    await session.ended;
    expect(performance.now() - expiredAt).toBeLessThan(5_000);
    expect(await rawHello(identity, JSON.stringify({ nodeId, agentVersion: '0.1.0' }))).toEqual({
      status: 403,
      type: 'application/json',
      body: SESSION_REFUSED.body,
    });
    expect((await refusalsOf('expired', nodeId)).length).toBe(1);
  });

  it('deleting the node ends its session within seconds, and its Hello is refused', async () => {
    const t = await createTestTenant(testDb());
    const { nodeId, identity } = await joined(t);
    const session = await open(identity);
    await setCordon(testDb(), t.operator, { tenantId: t.tenantId, nodeId }, true);
    const deletedAt = performance.now();
    await deleteNode(testDb(), t.operator, { tenantId: t.tenantId, nodeId });
    await session.ended;
    expect(performance.now() - deletedAt).toBeLessThan(5_000);
    expect(await rawHello(identity, JSON.stringify({ nodeId, agentVersion: '0.1.0' }))).toEqual({
      status: 403,
      type: 'application/json',
      body: SESSION_REFUSED.body,
    });
  });

  it("another node's id, an older generation after a reclaim, no certificate and a bad body are refused with the same bytes", async () => {
    const t = await createTestTenant(testDb());
    const claims = machineClaims();
    const a = await joined(t, claims);
    const b = await joined(t);
    const expected = { status: 403, type: 'application/json', body: SESSION_REFUSED.body };

    expect(await rawHello(a.identity, JSON.stringify({ nodeId: b.nodeId, agentVersion: '0.1.0' }))).toEqual(expected);
    expect((await refusalsOf('peer-mismatch', a.nodeId)).length).toBe(1);
    expect(await rawHello(null, JSON.stringify({ nodeId: a.nodeId, agentVersion: '0.1.0' }))).toEqual(expected);
    expect((await refusalsOf('no-client-certificate', null)).length).toBeGreaterThanOrEqual(1);
    expect(await rawHello(a.identity, '{not json')).toEqual(expected);
    expect(await rawHello(a.identity, JSON.stringify({ nodeId: a.nodeId, agentVersion: '0.1.0', padding: 'x'.repeat(10_000) }))).toEqual(
      expected,
    );
    expect((await refusalsOf('malformed', a.nodeId)).length).toBe(1);

    const old = await open(a.identity);
    const again = await joinThroughGateway(r, (await mintToken(t, { allowReclaim: true })).token!, claims);
    expect(again.answer.nodeId).toBe(a.nodeId);
    // The reclaim superseded the certificate the session was opened with: the server ends it.
    await old.ended;
    expect(await rawHello(a.identity, JSON.stringify({ nodeId: a.nodeId, agentVersion: '0.1.0' }))).toEqual(expected);
    expect((await refusalsOf('generation', a.nodeId)).length + (await refusalsOf('revoked', a.nodeId)).length).toBeGreaterThanOrEqual(1);
    // The new identity is welcome.
    const fresh = await open(await loadIdentity(again.dir));
    expect(fresh.welcome.nodeId).toBe(a.nodeId);
    fresh.close();
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
    const socket = await connectGateway(r.target, {
      keyPem: identity.identity.privateKeyPem,
      certificatePem: chainToPem([identity.identity.certificateChain[0]!]),
    });
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

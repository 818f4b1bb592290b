import http2 from 'node:http2';
import type { KeyObject } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayTarget } from '../../agent/renew/gateway-client';
import { loadIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import { renewIdentity } from '../../agent/renew/renew';
import { openSession, type AgentSession } from '../../agent/session/session-client';
import { SseReader } from '../../agent/session/sse';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { mintToken } from '../../test/join-harness';
import { h2ConnectionAs } from '../../test/node-connection';
import { BASE, joinThroughGateway, secondInstance, type RenewHarness } from '../../test/renew-harness';
import { useRenewHarness } from '../../test/session-harness';
import { SESSION_REPLACED } from '../../protocol/session-wire';
import { DEFAULT_MAX_SESSIONS_PER_NODE, sessionSettings } from './settings';

// A node holds at most a few live sessions (DEFAULT_MAX_SESSIONS_PER_NODE): a Hello beyond the limit is welcomed
// and ends the node's oldest session, which hears why (`end`, reason `replaced`). Checked through real gateways
// and APIs on the test PostgreSQL: a flood on one connection, a renewal that moves the session at the limit, and
// Hellos racing through two API instances and two gateways.

const LIMIT = DEFAULT_MAX_SESSIONS_PER_NODE;
let r: RenewHarness;
let signingKey: KeyObject;
// A lease of 10 s (grace 10): on a loaded machine a 2 s lease can lapse between refreshes, and a gateway
// whose lease lapsed answers Hellos with the retryable 503 while it registers again.
useRenewHarness((created) => ({ r, signingKey } = created), { sessions: sessionSettings(1, 10) });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function joined() {
  const t = await createTestTenant(testDb());
  const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!);
  return { nodeId: answer.nodeId, identity: await loadIdentity(dir) };
}

/** The node's sessions that count against its limit (opened and not replaced), as every instance reads them. */
async function liveSessions(nodeId: string) {
  const rows = await testDb().$queryRaw<Array<{ n: number }>>`
    SELECT count(*)::int AS n FROM node_sessions WHERE node_id = ${nodeId} AND replaced_at IS NULL`;
  return rows[0]!.n;
}

/** Samples {@link liveSessions} until stopped; answers the most seen. */
function watchLive(nodeId: string) {
  let stopped = false;
  let most = 0;
  const done = (async () => {
    while (!stopped) {
      most = Math.max(most, await liveSessions(nodeId));
      await sleep(5);
    }
  })();
  return async () => {
    stopped = true;
    await done;
    return Math.max(most, await liveSessions(nodeId));
  };
}

/**
 * One HTTP/2 connection to a gateway with the node's certificate, once the gateway's settings arrived: a client
 * that sends before them may open more streams than the gateway allows, and those are refused (gateway-streams.test.ts).
 */
async function connectAs(identity: LoadedIdentity, target: GatewayTarget = r.target) {
  const connection = await h2ConnectionAs(target, identity);
  await new Promise<void>((resolve, reject) => {
    connection.once('remoteSettings', () => resolve());
    connection.once('error', reject);
  });
  return connection;
}

interface RawSession {
  status: Promise<number>;
  ends: unknown[];
  isOpen: () => boolean;
}

/** A Hello on `connection`: its status, the data of its `end` events, and whether its stream is still open. */
function hello(connection: http2.ClientHttp2Session, nodeId: string): RawSession {
  const stream = connection.request({ ':method': 'POST', ':path': `${BASE}/v1/session`, 'content-type': 'application/json' });
  const reader = new SseReader();
  const ends: unknown[] = [];
  let open = true;
  const status = new Promise<number>((resolve) => {
    stream.on('response', (headers) => resolve(Number(headers[':status'])));
    stream.on('close', () => resolve(0));
  });
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    for (const event of reader.push(chunk)) if (event.type === 'end') ends.push(event.data);
  });
  stream.on('close', () => (open = false));
  stream.on('error', () => {});
  stream.end(JSON.stringify({ nodeId, agentVersion: '0.1.0-limit' }));
  return { status, ends, isOpen: () => open };
}

describe('sessions per node', () => {
  it(`300 Hellos on one connection leave at most ${LIMIT} live; each replaced one hears why`, { timeout: 180_000 }, async () => {
    const { nodeId, identity } = await joined();
    const connection = await connectAs(identity);
    const stop = watchLive(nodeId);
    const hellos = Array.from({ length: 300 }, () => hello(connection, nodeId));
    const statuses = await Promise.all(hellos.map((h) => h.status));
    // Every Hello was welcomed: the limit never refuses the newest, it ends the oldest.
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    await expect.poll(() => hellos.filter((h) => h.isOpen()).length, { timeout: 30_000, interval: 100 }).toBe(LIMIT);
    expect(await stop()).toBeLessThanOrEqual(LIMIT);
    await expect.poll(() => testDb().nodeSession.count({ where: { nodeId } }), { timeout: 10_000 }).toBe(LIMIT);
    const ended = hellos.filter((h) => !h.isOpen());
    expect(ended).toHaveLength(300 - LIMIT);
    for (const h of ended) expect(h.ends).toEqual([SESSION_REPLACED]);
    connection.destroy();
  });

  it('a renewal at the limit still moves the session: the new one is welcomed and the oldest ends', { timeout: 60_000 }, async () => {
    const { nodeId, identity } = await joined();
    const ends = new Map<string, unknown[]>();
    const open = (id: LoadedIdentity) =>
      openSession(r.target, id, {
        basePath: BASE,
        agentVersion: '0.1.0-limit',
        signingKey,
        onEvent: (event, on) => {
          if (event.type === 'end') ends.set(on.welcome.sessionId, [...(ends.get(on.welcome.sessionId) ?? []), event.data]);
        },
      });
    const sessions: AgentSession[] = [];
    for (let i = 0; i < LIMIT; i++) sessions.push(await open(identity));
    // Renewed on the newest session's connection, then the session moves to the new certificate.
    const renewed = await renewIdentity(identity, r.target, Date.now, undefined, (pathname, body) => sessions.at(-1)!.post(pathname, body));
    expect(renewed.leaf.serialNumber).not.toBe(identity.leaf.serialNumber);
    const moved = await open(renewed);
    expect(moved.welcome.nodeId).toBe(nodeId);
    await sessions[0]!.ended;
    expect(ends.get(sessions[0]!.welcome.sessionId)).toEqual([SESSION_REPLACED]);
    const rows = await testDb().nodeSession.findMany({ where: { nodeId }, orderBy: { openedAt: 'asc' } });
    expect(rows.map((row) => row.id)).toEqual([...sessions.slice(1), moved].map((s) => s.welcome.sessionId));
    expect(rows.at(-1)!.certSerial).toBe(renewed.leaf.serialNumber.toLowerCase());
    // The sessions the limit keeps stay open and are never told to end.
    for (const s of [...sessions.slice(1), moved]) expect(ends.get(s.welcome.sessionId)).toBeUndefined();
    expect(r.gateway.sessions.size).toBeGreaterThanOrEqual(LIMIT);
    for (const s of [...sessions, moved]) s.close();
  });
});

describe('Hellos of one node racing through two API instances and two gateways', () => {
  let instance: Awaited<ReturnType<typeof secondInstance>> | undefined;
  let second: GatewayTarget & { basePath: string };
  beforeAll(async () => {
    // A second API process: its own services (and pg pool) on the same keys and database, and its own gateway.
    instance = await secondInstance(r, { pgPoolMax: 8, sessionSettings: sessionSettings(1, 10) });
    second = instance.target;
  });
  afterAll(async () => {
    await instance?.close();
  });

  it(`leave at most ${LIMIT} live at any moment, and every Hello is welcomed`, { timeout: 120_000 }, async () => {
    const { nodeId, identity } = await joined();
    const connections = await Promise.all(Array.from({ length: 8 }, (_, i) => connectAs(identity, i % 2 ? second : r.target)));
    const stop = watchLive(nodeId);
    const hellos = connections.flatMap((connection) => Array.from({ length: 6 }, () => hello(connection, nodeId)));
    // Every Hello was welcomed, through both gateways (the connections alternate between them).
    const statuses = await Promise.all(hellos.map((h) => h.status));
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    await expect.poll(() => hellos.filter((h) => h.isOpen()).length, { timeout: 30_000, interval: 100 }).toBe(LIMIT);
    expect(await stop()).toBeLessThanOrEqual(LIMIT);
    const rows = await testDb().nodeSession.findMany({ where: { nodeId } });
    expect(rows).toHaveLength(LIMIT);
    for (const connection of connections) connection.destroy();
  });
});

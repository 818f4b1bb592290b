import { execFile, spawn } from 'node:child_process';
import { createHash, verify, X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadIdentity } from '../../agent/renew/identity';
import { testDb } from '../db';
import { createTestTenant, type TestTenant } from '../fixtures';
import { machineClaims, mintToken } from '../join-harness';
import { BASE, createRenewHarness, joinThroughGateway, type RenewHarness } from '../renew-harness';

// The Sessions contract as a client outside this code base speaks it: a Go program (standard library only,
// net/http with HTTP/2 by ALPN) opens a session through a real gateway in front of a real API on the test
// PostgreSQL. Nothing of the project's agent is on the wire; this test checks every byte the program printed.

const SOURCE = path.resolve(__dirname);

interface Seen {
  proto: string;
  status: number;
  contentType: string;
  hello: string;
  bodyB64?: string;
  events: Array<{ type: string; data: unknown; raw: string; atMs: number }>;
  ended: string;
}

let r: RenewHarness;
let work: string;
let client: string;
beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'bc-go-client-'));
  client = path.join(work, 'go-session-client');
  // No module downloads: the program has no dependency, and the build caches live in this run's directory.
  const env = {
    ...process.env,
    GOFLAGS: '-mod=mod',
    GOCACHE: path.join(work, 'cache'),
    GOPATH: path.join(work, 'gopath'),
    GOPROXY: 'off',
    GOSUMDB: 'off',
    CGO_ENABLED: '0',
  };
  await promisify(execFile)('go', ['build', '-o', client, '.'], { cwd: SOURCE, env, timeout: 170_000 });
  r = await createRenewHarness();
}, 180_000);
afterAll(async () => {
  await r?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

async function joined(t: TestTenant) {
  const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!, machineClaims());
  const identity = await loadIdentity(dir);
  const certFile = path.join(dir, 'leaf.pem');
  await writeFile(certFile, identity.leaf.toString());
  return { dir, nodeId: answer.nodeId, certFile, keyFile: path.join(dir, 'node.key') };
}

/** Runs the Go client; `whileRunning` gets to look at the database while the session is open. */
function runClient(
  node: { certFile: string; keyFile: string },
  nodeId: string,
  heartbeats: number,
  whileRunning?: () => Promise<void>,
): Promise<Seen> {
  return new Promise((resolve, reject) => {
    const caFile = path.join(work, 'serving-ca.pem');
    const child = spawn(client, [
      '-gateway',
      r.target.gatewayUrl.replace('127.0.0.1', 'localhost'),
      '-base-path',
      BASE,
      '-cert',
      node.certFile,
      '-key',
      node.keyFile,
      '-ca',
      caFile,
      '-node-id',
      nodeId,
      '-agent-version',
      'go-client/1',
      '-heartbeats',
      String(heartbeats),
      '-timeout',
      '20s',
    ]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const watched = whileRunning?.().catch((error: unknown) => {
      child.kill();
      throw error;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`the Go client exited ${code}: ${stderr}`));
      void (watched ?? Promise.resolve()).then(() => resolve(JSON.parse(stdout) as Seen), reject);
    });
  });
}

beforeAll(async () => {
  await writeFile(path.join(work, 'serving-ca.pem'), r.h.bundle.servingCa.certificatePem);
});

/** The welcome's envelope checked by hand: b64url body, ES256 r||s over exactly those bytes, the pinned key. */
function verifyWelcome(raw: string) {
  const envelope = JSON.parse(raw) as Record<string, unknown>;
  expect(Object.keys(envelope).sort()).toEqual(['body', 'sig']);
  const body = Buffer.from(String(envelope.body), 'base64url');
  const sig = Buffer.from(String(envelope.sig), 'base64url');
  // Strict b64url: no padding, and each decodes back to the same text.
  expect(body.toString('base64url')).toBe(envelope.body);
  expect(sig.toString('base64url')).toBe(envelope.sig);
  expect(sig.length).toBe(64);
  const key = new X509Certificate(r.h.trust.signingCertificateDer).publicKey;
  // The key is the one the agent pinned (join_signing_key_pin): sha256/ + b64 of its SPKI's hash.
  expect(
    `sha256/${createHash('sha256')
      .update(key.export({ type: 'spki', format: 'der' }))
      .digest('base64')}`,
  ).toBe(r.h.trust.signingKeyPin);
  expect(verify('sha256', body, { key, dsaEncoding: 'ieee-p1363' }, sig)).toBe(true);
  const tampered = Buffer.from(body);
  tampered[tampered.length - 2]! ^= 1;
  expect(verify('sha256', tampered, { key, dsaEncoding: 'ieee-p1363' }, sig)).toBe(false);
  return JSON.parse(body.toString('utf8')) as Record<string, unknown>;
}

describe('a Go client (standard library, HTTP/2) speaking the Sessions contract', () => {
  it('is welcomed with a signed welcome and heartbeats, and the node is connected while it holds the session', async () => {
    const t = await createTestTenant(testDb());
    const node = await joined(t);
    let connectedWhileOpen = false;
    const seen = await runClient(node, node.nodeId, 2, async () => {
      await expect
        .poll(async () => (await testDb().nodeSession.count({ where: { nodeId: node.nodeId } })) > 0, { timeout: 10_000, interval: 100 })
        .toBe(true);
      const rows = await testDb().$queryRaw<Array<{ n: number }>>`
        SELECT count(*)::int AS n FROM node_sessions s JOIN gateway_leases g ON g.gateway_id = s.gateway_id
         WHERE s.node_id = ${node.nodeId} AND g.expires_at > now()`;
      connectedWhileOpen = rows[0]!.n === 1;
    });
    expect(seen).toMatchObject({ proto: 'HTTP/2.0', status: 200, contentType: 'text/event-stream', ended: 'heartbeats' });
    expect(seen.hello).toBe(JSON.stringify({ nodeId: node.nodeId, agentVersion: 'go-client/1' }));
    // The Hello reports no trustVersion (the agent holds no trust set): the server's follows the welcome.
    expect(seen.events.map((e) => e.type)).toEqual(['welcome', 'trust', 'heartbeat', 'heartbeat']);
    expect(verifyWelcome(seen.events[1]!.raw)).toMatchObject({ status: 'trust', nodeId: node.nodeId, version: 1 });

    const welcome = verifyWelcome(seen.events[0]!.raw);
    expect(Object.keys(welcome).sort()).toEqual(['heartbeatSeconds', 'nodeId', 'serverTime', 'sessionId', 'status']);
    expect(welcome).toMatchObject({ status: 'welcome', nodeId: node.nodeId, heartbeatSeconds: 1 });
    expect(welcome.sessionId).toMatch(/^sess_/);
    expect(Number.isInteger(welcome.serverTime)).toBe(true);
    expect(Math.abs((welcome.serverTime as number) - Date.now() / 1000)).toBeLessThan(60);
    for (const beat of seen.events.slice(2)) {
      expect(Object.keys(beat.data as object)).toEqual(['serverTime']);
      expect(Number.isInteger((beat.data as { serverTime: unknown }).serverTime)).toBe(true);
    }

    expect(connectedWhileOpen).toBe(true);
    const session = await testDb().nodeSession.findUnique({ where: { id: welcome.sessionId as string } });
    // Still held, or already ended and reported by the gateway: either way it was this node's, with this version.
    if (session) expect(session).toMatchObject({ nodeId: node.nodeId, agentVersion: 'go-client/1' });
    const connected = (await testDb().event.findMany({ where: { tenantId: t.tenantId, type: 'node.connected' } })).filter(
      (e) => (e.data as { nodeId?: string }).nodeId === node.nodeId,
    );
    expect(connected.map((e) => (e.data as { sessionId?: string }).sessionId)).toEqual([welcome.sessionId]);
  });

  it('a Hello naming another node is refused with the uniform bytes, and nothing is opened', async () => {
    const t = await createTestTenant(testDb());
    const a = await joined(t);
    const b = await joined(t);
    const seen = await runClient(a, b.nodeId, 1);
    expect(seen).toMatchObject({ proto: 'HTTP/2.0', status: 403, contentType: 'application/json', events: [] });
    expect(Buffer.from(seen.bodyB64!, 'base64').toString('utf8')).toBe('{"code":"ACCESS_DENIED","message":"Session refused"}');
    expect(await testDb().nodeSession.count({ where: { nodeId: { in: [a.nodeId, b.nodeId] } } })).toBe(0);
    const refused = (await testDb().event.findMany({ where: { tenantId: t.tenantId, type: 'security.session.refused' } })).map(
      (e) => e.data as { reason?: string; nodeId?: string },
    );
    expect(refused).toEqual([expect.objectContaining({ reason: 'peer-mismatch', nodeId: a.nodeId })]);
  });
});

import http2 from 'node:http2';
import type { KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import { SessionRefusedError } from '../../agent/session/session-client';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { machineClaims, mintToken } from '../../test/join-harness';
import { h2ConnectionAs } from '../../test/node-connection';
import { BASE, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { joinedThroughGateway, openAgentSession, useRenewHarness } from '../../test/session-harness';
import { deleteNode, revokeNodeIdentity, setCordon } from '../nodes/lifecycle';
import { SESSION_REFUSED } from '../../protocol/session-wire';

// How a session through a real gateway ends (revoked, expired, deleted, superseded by a reclaim) and which
// Hellos are refused, always with the uniform bytes (sessions-gateway.test.ts: sessions that stay).

let r: RenewHarness;
let signingKey: KeyObject;
useRenewHarness((created) => ({ r, signingKey } = created));

const open = (identity: LoadedIdentity) => openAgentSession(r, signingKey, identity);
const joined = (t: TestTenant, claims = machineClaims()) => joinedThroughGateway(r, t, claims);

/** A Hello sent by hand over HTTP/2: status, content type and body bytes (a refusal must be the same bytes). */
async function rawHello(identity: LoadedIdentity | null, body: string) {
  const connection = await h2ConnectionAs(r.target, identity);
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

/** A refused Hello as rawHello reads it: the uniform bytes of protocol.md. */
const REFUSED = { status: 403, type: 'application/json', body: SESSION_REFUSED.body };

async function refusalsOf(reason: string, nodeId: string | null) {
  const events = await testDb().event.findMany({ where: { type: 'security.session.refused' }, orderBy: { id: 'desc' }, take: 50 });
  return events.filter(
    (e) => (e.data as { reason?: string }).reason === reason && (nodeId === null || (e.data as { nodeId?: string }).nodeId === nodeId),
  );
}

describe('a session over HTTP/2', () => {
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
    expect(raw).toEqual(REFUSED);
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
    expect(await rawHello(identity, JSON.stringify({ nodeId, agentVersion: '0.1.0' }))).toEqual(REFUSED);
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
    expect(await rawHello(identity, JSON.stringify({ nodeId, agentVersion: '0.1.0' }))).toEqual(REFUSED);
  });

  it("another node's id, an older generation after a reclaim, no certificate and a bad body are refused with the same bytes", async () => {
    const t = await createTestTenant(testDb());
    const claims = machineClaims();
    const a = await joined(t, claims);
    const b = await joined(t);

    expect(await rawHello(a.identity, JSON.stringify({ nodeId: b.nodeId, agentVersion: '0.1.0' }))).toEqual(REFUSED);
    expect((await refusalsOf('peer-mismatch', a.nodeId)).length).toBe(1);
    expect(await rawHello(null, JSON.stringify({ nodeId: a.nodeId, agentVersion: '0.1.0' }))).toEqual(REFUSED);
    expect((await refusalsOf('no-client-certificate', null)).length).toBeGreaterThanOrEqual(1);
    expect(await rawHello(a.identity, '{not json')).toEqual(REFUSED);
    expect(await rawHello(a.identity, JSON.stringify({ nodeId: a.nodeId, agentVersion: '0.1.0', padding: 'x'.repeat(10_000) }))).toEqual(
      REFUSED,
    );
    expect((await refusalsOf('malformed', a.nodeId)).length).toBe(1);

    const old = await open(a.identity);
    const again = await joinThroughGateway(r, (await mintToken(t, { allowReclaim: true })).token!, claims);
    expect(again.answer.nodeId).toBe(a.nodeId);
    // The reclaim superseded the certificate the session was opened with: the server ends it.
    await old.ended;
    expect(await rawHello(a.identity, JSON.stringify({ nodeId: a.nodeId, agentVersion: '0.1.0' }))).toEqual(REFUSED);
    expect((await refusalsOf('generation', a.nodeId)).length + (await refusalsOf('revoked', a.nodeId)).length).toBeGreaterThanOrEqual(1);
    // The new identity is welcome.
    const fresh = await open(await loadIdentity(again.dir));
    expect(fresh.welcome.nodeId).toBe(a.nodeId);
    fresh.close();
  });
});

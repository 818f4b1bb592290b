import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import { openSession, type AgentSession } from '../../agent/session/session-client';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { machineClaims, mintToken } from '../../test/join-harness';
import { BASE, createRenewHarness, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { deleteNode, revokeNodeIdentity, setCordon } from '../nodes/lifecycle';

// Sessions end by announcement: the transaction that revokes, reclaims, deletes or expires a certificate
// NOTIFYs, the API relays it on the gateway's watch stream, and the gateway makes its lease call at once. The
// gateway's scheduled lease call comes only every two minutes here, so a session that ends within seconds was
// ended by the announcement; the counters say which lease calls ran, in what order.
const SLOW_POLL = { heartbeatSeconds: 1, graceSeconds: 2, leaseSeconds: 600, refreshMs: 120_000, sweepMs: 500, maxSessionsPerNode: 3 };

let r: RenewHarness;
let signingKey: X509Certificate['publicKey'];
beforeAll(async () => {
  r = await createRenewHarness({ sessions: SLOW_POLL });
  signingKey = new X509Certificate(r.h.trust.signingCertificateDer).publicKey;
  await r.gateway.sessions.start();
  // The watch stream is open (its `ready` arrived) before any test changes anything.
  for (let i = 0; i < 100 && r.gateway.sessions.stats.watchesOpened < 1; i++) await new Promise((resolve) => setTimeout(resolve, 100));
  if (r.gateway.sessions.stats.watchesOpened < 1) throw new Error('the gateway never opened its watch stream');
});
afterAll(async () => {
  await r?.close();
});

async function joined(t: TestTenant, claims = machineClaims()) {
  const { dir, answer } = await joinThroughGateway(r, (await mintToken(t, { allowReclaim: true })).token!, claims);
  return { nodeId: answer.nodeId, identity: await loadIdentity(dir) };
}
const open = (identity: LoadedIdentity) => openSession(r.target, identity, { basePath: BASE, agentVersion: '0.1.0-test', signingKey });

/**
 * Runs `change` on an open session and answers what happened after it, in order: the lease calls (each
 * `announced` or `scheduled`) up to the moment the stream ended. Fails when it has not ended within 10 s.
 */
async function endedBy(session: AgentSession, change: () => Promise<unknown>): Promise<string[]> {
  const stats = r.gateway.sessions.stats;
  const before = { calls: stats.leaseCalls, announced: stats.announcedLeaseCalls };
  await change();
  const ended = await Promise.race([
    session.ended.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000)),
  ]);
  expect(ended).toBe(true);
  const announced = stats.announcedLeaseCalls - before.announced;
  const scheduled = stats.leaseCalls - before.calls - announced;
  return [...Array<string>(Math.max(0, announced)).fill('announced'), ...Array<string>(Math.max(0, scheduled)).fill('scheduled'), 'ended'];
}

describe('a session ends when its certificate stops being valid, announced in the same transaction', { timeout: 60_000 }, () => {
  it('revokeIdentity: the gateway hears of it on its watch stream and ends the session, no scheduled lease call needed', async () => {
    const t = await createTestTenant(testDb());
    const { nodeId, identity } = await joined(t);
    const session = await open(identity);
    const order = await endedBy(session, () => revokeNodeIdentity(testDb(), t.operator, { tenantId: t.tenantId, nodeId }));
    expect(order[0]).toBe('announced');
    expect(order).not.toContain('scheduled');
    expect(order.at(-1)).toBe('ended');
    expect(await testDb().nodeSession.count({ where: { nodeId } })).toBe(0);
  });

  it('a reclaim, a delete and an earlier expiry end their sessions the same way', async () => {
    const t = await createTestTenant(testDb());
    const claims = machineClaims();
    const a = await joined(t, claims);
    const reclaimed = await endedBy(await open(a.identity), () => joined(t, claims));
    expect(reclaimed).not.toContain('scheduled');
    expect(reclaimed[0]).toBe('announced');

    const b = await joined(t);
    const sessionB = await open(b.identity);
    await setCordon(testDb(), t.operator, { tenantId: t.tenantId, nodeId: b.nodeId }, true);
    const deleted = await endedBy(sessionB, () => deleteNode(testDb(), t.operator, { tenantId: t.tenantId, nodeId: b.nodeId }));
    expect(deleted).not.toContain('scheduled');
    expect(deleted[0]).toBe('announced');

    const c = await joined(t);
    const expired = await endedBy(await open(c.identity), () =>
      testDb().nodeCert.update({
        where: { serial: c.identity.leaf.serialNumber.toLowerCase() },
        data: { notAfter: new Date(Date.now() - 1_000) },
      }),
    );
    expect(expired).not.toContain('scheduled');
    expect(expired[0]).toBe('announced');
  });

  it('nothing is announced for a change that rolled back, nor for a renewal-like write that ends nothing', async () => {
    const t = await createTestTenant(testDb());
    const { nodeId, identity } = await joined(t);
    const session = await open(identity);
    let endedEarly = false;
    void session.ended.then(() => (endedEarly = true));
    const announcedBefore = r.gateway.sessions.stats.announcedLeaseCalls;
    await expect(
      testDb().$transaction(async (tx) => {
        await tx.nodeCert.updateMany({ where: { nodeId }, data: { revokedAt: new Date(), revocationReason: 'test' } });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    // A later expiry ends nothing and announces nothing either.
    await testDb().$executeRaw`UPDATE node_certs SET not_after = not_after + interval '1 hour' WHERE node_id = ${nodeId}`;
    // An announced change for another node, to know the watch stream delivered everything sent before it.
    const other = await joined(t);
    const otherSession = await open(other.identity);
    await endedBy(otherSession, () => revokeNodeIdentity(testDb(), t.operator, { tenantId: t.tenantId, nodeId: other.nodeId }));
    expect(r.gateway.sessions.stats.announcedLeaseCalls - announcedBefore).toBe(1);
    expect(endedEarly).toBe(false);
    expect(await testDb().nodeSession.count({ where: { nodeId } })).toBe(1);
    session.close();
  });
});

import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../db/client';
import { testDatabaseUrl, testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { at, DAY, endSessions, insertNode, reconnect } from '../../test/stale-nodes';
import { setCordon } from '../nodes/lifecycle';
import { createWebhook } from '../webhooks/subscriptions';
import { applyStalePolicies, inClock, STALE_POLICY_ACTOR } from './stale-policy';
import { startStaleNodeWorker } from './stale-worker';
import { planStaleNodes, setStaleNodesPolicy } from './stale-plan';

const db = () => testDb();
// The database clock the policy reads in these tests (compute.now, per transaction): time moves by days
// without anyone waiting.
const T0 = new Date('2031-03-01T00:00:00.000Z');
const N = 7;
const M = 14;

async function tenantWithPolicy(cordonAfterDays = N, retireAfterDays = M): Promise<TestTenant> {
  const t = await createTestTenant(db(), { label: 'stale' });
  await setStaleNodesPolicy(db(), t.admin, { tenantId: t.tenantId, poolId: t.poolId, staleNodes: { cordonAfterDays, retireAfterDays } });
  return t;
}

const run = (t: TestTenant, now: Date, client: Db = db(), batch?: number) =>
  applyStalePolicies(client, { tenantIds: [t.tenantId], now, batch });
const plan = (t: TestTenant, now: Date) =>
  inClock(db(), now, (tx) => planStaleNodes(tx, t.viewer, { tenantId: t.tenantId, poolId: t.poolId }));
const node = (id: string) => db().node.findUniqueOrThrow({ where: { id } });
const eventsOf = async (t: TestTenant, type: string) =>
  (await db().event.findMany({ where: { tenantId: t.tenantId, type }, orderBy: { id: 'asc' } })).map(
    (e) => (e.data as { nodeId: string }).nodeId,
  );
const auditOf = async (t: TestTenant, action: string) =>
  (await db().auditEntry.findMany({ where: { tenantId: t.tenantId, action }, orderBy: { id: 'asc' } })).map((a) => [a.resource, a.actor]);

describe('stale-node policy: cordon', () => {
  it('cordons a node disconnected exactly cordonAfterDays, not one a second short, and leaves connected nodes alone', async () => {
    const t = await tenantWithPolicy();
    const due = await insertNode(db(), t, t.poolId, at(T0, -N));
    const short = await insertNode(db(), t, t.poolId, at(T0, -N, 1000));
    // Its last session ended long ago, but another session of it is open: connected.
    const stillSession = await insertNode(db(), t, t.poolId, at(T0, -100), { liveSession: true });
    // Never had a session (as in a pool without bcd): never stale.
    const never = await insertNode(db(), t, t.poolId, null);
    // Another pool of the tenant, without a policy.
    const otherPool = await insertNode(db(), t, await t.newPool(), at(T0, -100));

    const before = await plan(t, T0);
    expect(before.counts).toEqual({ cordon: 1, retire: 0 });
    expect(before.items).toEqual([
      {
        nodeId: due.id,
        hostname: expect.stringMatching(/^host-/),
        action: 'cordon',
        disconnectedSince: at(T0, -N).toISOString(),
        staleCordonedAt: null,
      },
    ]);
    expect(before.evaluatedAt).toBe(T0.toISOString());
    expect(await node(due.id)).toMatchObject({ cordoned: false });

    expect(await run(t, T0)).toEqual({ pools: 1, cordoned: 1, retired: 0 });
    expect(await node(due.id)).toMatchObject({ cordoned: true, state: 'adopted', staleCordonedAt: T0 });
    for (const id of [short.id, stillSession.id, never.id, otherPool.id]) expect(await node(id)).toMatchObject({ cordoned: false });
    expect(await eventsOf(t, 'node.stale.cordoned')).toEqual([due.id]);
    expect(await auditOf(t, 'node.stale.cordoned')).toEqual([[`compute-node/${due.id}`, STALE_POLICY_ACTOR]]);
    // A second run finds nothing more to do now.
    expect(await run(t, T0)).toEqual({ pools: 1, cordoned: 0, retired: 0 });
    expect((await plan(t, T0)).counts).toEqual({ cordon: 0, retire: 0 });
    // The one a second short is due a second later.
    expect(await run(t, at(T0, 0, 1000))).toMatchObject({ cordoned: 1 });
    expect(await node(short.id)).toMatchObject({ cordoned: true });
  });
});

describe('stale-node policy: retire', () => {
  it('retires retireAfterDays after its cordon through the delete path, unless it connected since', async () => {
    const t = await tenantWithPolicy();
    const gone = await insertNode(db(), t, t.poolId, at(T0, -N));
    const back = await insertNode(db(), t, t.poolId, at(T0, -N));
    await run(t, T0);
    expect(await eventsOf(t, 'node.stale.cordoned')).toEqual([gone.id, back.id].sort());

    // `back` connects again after its cordon: left alone from then on (its cordon stays).
    await reconnect(db(), back.id);
    const justShort = at(T0, M, -1000);
    expect(await run(t, justShort)).toMatchObject({ retired: 0, cordoned: 0 });
    const due = await plan(t, at(T0, M));
    expect(due.counts).toEqual({ cordon: 0, retire: 1 });
    expect(due.items).toEqual([expect.objectContaining({ nodeId: gone.id, action: 'retire', staleCordonedAt: T0.toISOString() })]);

    expect(await run(t, at(T0, M))).toMatchObject({ retired: 1, cordoned: 0 });
    const retired = await node(gone.id);
    expect(retired).toMatchObject({ state: 'retired', hardwareKey: null, hardwareKeyTrusted: false });
    expect((retired.claims as { macs?: unknown }).macs).toBeUndefined();
    expect(await db().nodeCert.findUniqueOrThrow({ where: { serial: gone.serial } })).toMatchObject({ revocationReason: 'deleted' });
    expect(await db().tpmEkBinding.count({ where: { nodeId: gone.id } })).toBe(0);
    expect(await eventsOf(t, 'node.stale.retired')).toEqual([gone.id]);
    expect(await auditOf(t, 'node.stale.retired')).toEqual([[`compute-node/${gone.id}`, STALE_POLICY_ACTOR]]);
    expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'security.certificate-revoked' } })).toBe(1);
    expect(await node(back.id)).toMatchObject({ state: 'adopted', cordoned: true });

    // `back` leaves again: its days start over from that session's end, cordon then retire.
    const left = at(T0, M + 1);
    await endSessions(db(), back.id, left);
    expect(await run(t, at(left, N, -1000))).toMatchObject({ cordoned: 0, retired: 0 });
    expect(await run(t, at(left, N))).toMatchObject({ cordoned: 1, retired: 0 });
    expect((await db().event.findMany({ where: { tenantId: t.tenantId, type: 'node.stale.cordoned' } })).at(-1)?.data).toMatchObject({
      nodeId: back.id,
      wasCordoned: true,
      disconnectedSince: left.toISOString(),
    });
    expect(await run(t, at(left, N + M, -1000))).toMatchObject({ retired: 0 });
    expect(await run(t, at(left, N + M))).toMatchObject({ retired: 1 });
    expect(await node(back.id)).toMatchObject({ state: 'retired' });
  });

  it('leaves a node an operator uncordoned after the policy cordoned it, until it connects and leaves again', async () => {
    const t = await tenantWithPolicy();
    const n = await insertNode(db(), t, t.poolId, at(T0, -N));
    await run(t, T0);
    await setCordon(db(), t.operator, { tenantId: t.tenantId, nodeId: n.id }, false);
    expect(await run(t, at(T0, M + 100))).toMatchObject({ cordoned: 0, retired: 0 });
    expect(await node(n.id)).toMatchObject({ cordoned: false, state: 'adopted' });
  });
});

describe('stale-node policy: the worker', () => {
  it('applies the policies on its schedule by the database clock, and its stop waits for the tick under way', async () => {
    const t = await tenantWithPolicy();
    const n = await insertNode(db(), t, t.poolId, new Date(Date.now() - (N + 1) * DAY));
    const stop = startStaleNodeWorker(db(), { intervalMs: 50, onlyTenants: [t.tenantId] });
    try {
      await expect.poll(async () => (await node(n.id)).cordoned, { timeout: 20_000 }).toBe(true);
    } finally {
      await stop();
    }
    expect(await eventsOf(t, 'node.stale.cordoned')).toEqual([n.id]);
  });
});

describe('stale-node policy: webhooks', () => {
  it('offers both steps to a subscription naming them, with the node and its pool', async () => {
    const t = await tenantWithPolicy();
    const saved = process.env.BETTER_COMPUTE_SECRET;
    process.env.BETTER_COMPUTE_SECRET ??= randomBytes(32).toString('base64url');
    try {
      await createWebhook(db(), t.admin, {
        tenantId: t.tenantId,
        url: 'https://hooks.example.com/stale',
        eventTypes: ['node.stale.cordoned', 'node.stale.retired'],
      });
    } finally {
      if (saved === undefined) delete process.env.BETTER_COMPUTE_SECRET;
    }
    const n = await insertNode(db(), t, t.poolId, at(T0, -N));
    await run(t, T0);
    await run(t, at(T0, M));
    const deliveries = await db().$queryRaw<{ event_type: string; body: string }[]>`
      SELECT event_type, body FROM webhook_deliveries WHERE tenant_id = ${t.tenantId} ORDER BY event_id`;
    expect(deliveries.map((d) => d.event_type)).toEqual(['node.stale.cordoned', 'node.stale.retired']);
    for (const d of deliveries) expect(JSON.parse(d.body).data).toMatchObject({ nodeId: n.id, poolId: t.poolId, siteId: t.siteId });
  });
});

describe('stale-node policy: one worker across instances', () => {
  const clients: Db[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.$disconnect()));
  });

  it('two workers racing on one database handle each node exactly once, for both steps', { timeout: 120_000 }, async () => {
    const t = await tenantWithPolicy();
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await insertNode(db(), t, t.poolId, at(T0, -N - i))).id);
    ids.sort();
    const [a, b] = [createDb(testDatabaseUrl(), { max: 4 }), createDb(testDatabaseUrl(), { max: 4 })];
    clients.push(a, b);

    const cordon = await Promise.all([run(t, T0, a, 2), run(t, T0, b, 2), run(t, T0, a, 3), run(t, T0, b, 3)]);
    expect(cordon.reduce((sum, r) => sum + r.cordoned, 0)).toBe(12);
    expect((await eventsOf(t, 'node.stale.cordoned')).sort()).toEqual(ids);
    expect((await auditOf(t, 'node.stale.cordoned')).length).toBe(12);

    const later = at(T0, M);
    const retire = await Promise.all([run(t, later, a, 2), run(t, later, b, 2), run(t, later, a, 3), run(t, later, b, 3)]);
    expect(retire.reduce((sum, r) => sum + r.retired, 0)).toBe(12);
    expect((await eventsOf(t, 'node.stale.retired')).sort()).toEqual(ids);
    expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'security.certificate-revoked' } })).toBe(12);
    expect(await db().node.count({ where: { tenantId: t.tenantId, state: 'retired' } })).toBe(12);
  });
});

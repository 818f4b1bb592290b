import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { createCaller } from '../api/root';
import { getOverview } from './overview';
import { revokeNodeIdentity } from '../nodes/lifecycle';
import { CREATED_EVENT_LIMIT } from '../requests/request-store-sql';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { randomMac } from '../../test/discovery-harness';

// The overview's numbers: real joins through JoinService (node.joined, a refusal, fed into the rollup by the
// triggers of migration 20261202070000_overview_rollup), plus a history seeded at known hours.

let h: JoinHarness;
let t: TestTenant;
const db = testDb;

const hoursAgo = (n: number) => `date_trunc('hour', compute_now()) - interval '${n} hours' + interval '5 minutes'`;

beforeAll(async () => {
  h = await createJoinHarness();
  t = await createTestTenant(db());
});
afterAll(() => h.pool.end());

describe('overview.get', () => {
  it('counts joins admitted and refused per hour from the rollup, refusals with the events their rate limit suppressed', async () => {
    const token = (await mintToken(t, { maxUses: 2 })).token!;
    expect((await agentJoin(h, token, machineClaims())).status).toBe(200);
    expect((await agentJoin(h, token, machineClaims(), { mutate: (b) => (b.role = 'site') })).status).toBe(403);
    await db().$executeRawUnsafe(
      `INSERT INTO events (tenant_id, type, data, created_at) VALUES
         ($1, 'security.join.refused', '{"attestor":"join-token","reason":"join-token:expired","suppressed":4}', ${hoursAgo(3)}),
         ($1, 'security.join.refused', '{"attestor":"join-token","reason":"join-token:expired","suppressed":0}', ${hoursAgo(3)}),
         ($1, 'node.joined', '{"attestor":"discovery"}', ${hoursAgo(30)}),
         ($1, 'security.renew.refused', '{"reason":"revoked","suppressed":1}', ${hoursAgo(1)})`,
      t.tenantId,
    );
    // A join request is counted from its row (its event is rate-limited).
    await db().$executeRawUnsafe(
      `INSERT INTO join_requests (id, tenant_id, site_id, attestor, state, machine_key, csr_sha256, expires_at, created_at)
       VALUES ('jreq_ov30h' || $1, $1, $2, 'discovery', 'expired', 'mk-ov30h' || $1, md5($1), ${hoursAgo(29)}, ${hoursAgo(30)})`,
      t.tenantId,
      t.siteId,
    );
    const day = await getOverview(db(), t.viewer, { tenantId: t.tenantId, range: '24h' });
    expect(day.hours).toHaveLength(24);
    const last = 23;
    expect(day.joins.admitted).toEqual([{ key: 'join-token', counts: Array.from({ length: 24 }, (_, i) => (i === last ? 1 : 0)) }]);
    const refused = Object.fromEntries(day.joins.refused.map((s) => [s.key, s.counts]));
    expect(refused['join-token:expired']![last - 3]).toBe(6);
    expect(refused['join-token:role-mismatch']![last]).toBe(1);
    expect(day.joins.pending).toEqual([]); // 30 hours ago is outside the day
    expect(day.renewals.refused).toEqual([{ key: 'revoked', counts: Array.from({ length: 24 }, (_, i) => (i === last - 1 ? 2 : 0)) }]);
    expect(day.connected).toEqual([{ poolId: t.poolId, poolName: t.pool.name, connected: 0, total: 1 }]);

    const week = await getOverview(db(), t.viewer, { tenantId: t.tenantId, range: '7d' });
    expect(week.hours).toHaveLength(168);
    expect(week.joins.admitted.map((s) => [s.key, s.counts.reduce((a, b) => a + b)])).toEqual([
      ['discovery', 1],
      ['join-token', 1],
    ]);
    expect(week.joins.pending.map((s) => [s.key, s.counts[167 - 30]])).toEqual([['discovery', 1]]);
  });

  it('shows the queue, time to decision per site, renewals and certificates expiring per pool', async () => {
    const u = await createTestTenant(db());
    await db().$executeRawUnsafe(
      `INSERT INTO join_requests (id, tenant_id, site_id, attestor, state, machine_key, csr_sha256, expires_at, created_at, decided_at)
       SELECT 'jreq_ov' || i || $3, $1, $2, 'discovery', CASE WHEN i <= 2 THEN 'pending' ELSE 'rejected' END, 'mk-ov' || i || $3, md5(i::text),
              compute_now() + interval '1 day', compute_now() - i * interval '10 minutes', CASE WHEN i <= 2 THEN NULL ELSE compute_now() END
         FROM generate_series(1, 12) i`,
      u.tenantId,
      u.siteId,
      u.tenantId,
    );
    const token = (await mintToken(u)).token!;
    const joined = await agentJoin(h, token, machineClaims());
    expect(joined.status).toBe(200);
    // A renewal writes the generation's second certificate (RenewalWriter's row, inserted here directly).
    await db().$executeRawUnsafe(
      `INSERT INTO node_certs (serial, node_id, identity_generation, role, spki_sha256, der, not_before, not_after)
       VALUES ('ov-renewed-' || $1, $1, 1, 'node', sha256($1::bytea), '\\x00', compute_now(), compute_now() + interval '2 hours')`,
      joined.answer!.nodeId,
    );
    const overview = await getOverview(db(), u.viewer, { tenantId: u.tenantId, range: '24h' });
    expect(overview.renewals.renewed.reduce((a, b) => a + b)).toBe(1);
    expect(overview.renewals.renewed[23]).toBe(1);
    expect(overview.queue).toEqual([
      { siteId: u.siteId, siteName: 'site-a', poolId: u.poolId, pending: 2, oldestPendingSeconds: expect.any(Number) },
    ]);
    expect(overview.queue[0]!.oldestPendingSeconds).toBeGreaterThanOrEqual(1195);
    // Decided after 30, 40, … 120 minutes: the median 75 min, p90 111 min (linear interpolation).
    expect(overview.decisions).toEqual([
      {
        siteId: u.siteId,
        siteName: 'site-a',
        poolId: u.poolId,
        decided: 10,
        medianSeconds: expect.any(Number),
        p90Seconds: expect.any(Number),
      },
    ]);
    expect(Math.abs(overview.decisions[0]!.medianSeconds - 75 * 60)).toBeLessThan(5);
    expect(Math.abs(overview.decisions[0]!.p90Seconds - 111 * 60)).toBeLessThan(5);
    // The node's newest certificate (the 24-hour one from the join outlives the 2-hour one) counts once.
    expect(overview.expiring).toEqual([{ poolId: u.poolId, poolName: u.pool.name, within1h: 0, within6h: 0, within24h: 1 }]);
    // Revoking the identity revokes both certificates: the node holds no valid certificate any more.
    await revokeNodeIdentity(db(), u.admin, { tenantId: u.tenantId, nodeId: joined.answer!.nodeId });
    expect((await getOverview(db(), u.viewer, { tenantId: u.tenantId, range: '24h' })).expiring).toEqual([]);
    expect((await db().node.findUniqueOrThrow({ where: { id: joined.answer!.nodeId } })).certNotAfter).toBeNull();
  });

  it('counts pending join requests from their rows, whatever the rate limit of their events recorded', async () => {
    const u = await createTestTenant(db());
    // The site's node.join-request.created events are spent for this window: none of these requests gets one.
    await db().$executeRawUnsafe(
      `SELECT rate_limit_hit($1, $2, $3::interval) FROM generate_series(1, $2)`,
      `${CREATED_EVENT_LIMIT.keyPrefix}:${u.tenantId}:${u.siteId}`,
      CREATED_EVENT_LIMIT.limit,
      CREATED_EVENT_LIMIT.window,
    );
    const n = 5;
    const ask = (token: string, mac: string) =>
      agentJoin(h, token, machineClaims({ macs: [mac] }), { role: 'discovery', attestor: 'discovery', expectedRole: 'ramdisk' });
    const leases: Array<{ token: string; mac: string }> = [];
    for (let i = 0; i < n; i++) {
      const mac = randomMac();
      const lease = await createDiscoveryToken(db(), u.admin, { tenantId: u.tenantId, siteId: u.siteId, mac, ttlSeconds: 3600 });
      leases.push({ token: lease.token!, mac });
      expect((await ask(lease.token!, mac)).answer!.status).toBe('pending');
    }
    // A machine asking again refreshes its request: still one row, counted once.
    expect((await ask(leases[0]!.token, leases[0]!.mac)).answer!.status).toBe('pending');
    const rows = await db().joinRequest.count({ where: { tenantId: u.tenantId, state: 'pending' } });
    expect(rows).toBe(n);
    expect(await db().event.count({ where: { tenantId: u.tenantId, type: 'node.join-request.created' } })).toBe(0);

    const overview = await getOverview(db(), u.viewer, { tenantId: u.tenantId, range: '24h' });
    expect(overview.queue.map((q) => q.pending)).toEqual([rows]);
    expect(overview.joins.pending.map((s) => [s.key, s.counts.reduce((a, b) => a + b)])).toEqual([['discovery', rows]]);
  });

  it('counts connected nodes per pool: sessions under a live gateway lease, out of the nodes not retired', async () => {
    const u = await createTestTenant(db());
    const token = (await mintToken(u, { maxUses: 4 })).token!;
    const nodes: string[] = [];
    for (let i = 0; i < 4; i++) {
      const joined = await agentJoin(h, token, machineClaims());
      expect(joined.status).toBe(200);
      nodes.push(joined.answer!.nodeId);
    }
    const [live, twice, deadGateway, retired] = nodes as [string, string, string, string];
    const suffix = u.tenantId.slice(-8);
    await db().$executeRawUnsafe(
      `INSERT INTO gateway_leases (gateway_id, started_at, heartbeat_at, expires_at) VALUES
         ('gw-live-' || $1, compute_now(), compute_now(), compute_now() + interval '1 minute'),
         ('gw-dead-' || $1, compute_now() - interval '1 hour', compute_now() - interval '10 minutes', compute_now() - interval '1 second')`,
      suffix,
    );
    // Two sessions of one node (a reconnect whose old session is not yet reported closed) count it once.
    const sessions: Array<[string, string]> = [
      [live, 'live'],
      [twice, 'live'],
      [twice, 'live'],
      [deadGateway, 'dead'],
      [retired, 'live'],
    ];
    for (const [i, [nodeId, gateway]] of sessions.entries()) {
      await db().$executeRawUnsafe(
        `INSERT INTO node_sessions (id, node_id, cert_serial, gateway_id, agent_version, opened_at) VALUES ($1, $2, 'serial', $3, '0.1.0-test', compute_now())`,
        `sess-ov-${suffix}-${i}`,
        nodeId,
        `gw-${gateway}-${suffix}`,
      );
    }
    await db().node.update({ where: { id: retired }, data: { state: 'retired' } });
    const overview = await getOverview(db(), u.viewer, { tenantId: u.tenantId, range: '24h' });
    expect(overview.connected).toEqual([{ poolId: u.poolId, poolName: u.pool.name, connected: 2, total: 3 }]);
    // Another tenant's view holds none of these.
    expect((await getOverview(db(), t.viewer, { tenantId: t.tenantId, range: '24h' })).connected.every((c) => c.poolId !== u.poolId)).toBe(
      true,
    );
  });

  it('is decided on the tenant: another tenant is NOT_FOUND', async () => {
    const other = await createTestTenant(db());
    expect((await failure(getOverview(db(), other.viewer, { tenantId: t.tenantId, range: '24h' }))).code).toBe('NOT_FOUND');
    // Input is parsed by the adapter (docs/architecture.md): the procedure refuses an unknown range.
    const caller = createCaller({ db: db(), principal: t.viewer });
    expect(await failure(caller.overview.get({ tenantId: t.tenantId, range: '30d' as '7d' }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'range',
    });
    expect((await caller.overview.get({ tenantId: t.tenantId })).range).toBe('24h');
  });
});

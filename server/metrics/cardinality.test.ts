import pg from 'pg';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { randomMac } from '../../test/discovery-harness';
import { parsePrometheusText } from '../../test/prometheus-text';
import { createServerDatabase, type ServerDatabase } from '../../test/server-process';
import { createApiMetrics, recordJoin, recordRenewal } from './api-metrics';
import { registerSharedCollectors } from './shared-collectors';
import { SharedStateReader, readSharedState } from './shared-state';

// Label cardinality stays bounded with 10,000 distinct machines: every value a machine could choose (its
// role string, attestor name, a reason-shaped string, its MAC, its node id) ends in a closed set. The
// recording functions are driven directly (10,000 real joins would take minutes on these machines), and the
// shared gauges read a database holding 10,000 nodes with certificates and 10,000 join requests.

const MACHINES = 10_000;
let database: ServerDatabase;
let pool: pg.Pool;
let t: TestTenant;

beforeAll(async () => {
  database = await createServerDatabase('metrics_cardinality');
  pool = new pg.Pool({ connectionString: database.url, max: 4 });
  t = await createTestTenant(database.db);
  await pool.query(
    `INSERT INTO nodes (id, tenant_id, site_id, pool_id, role, state, trust, attestor, claims)
     SELECT 'node_card' || i, $1, $2, $3, 'node', (ARRAY['adopting', 'adopted', 'retired'])[1 + i % 3], 'tenant-owned', 'join-token',
            jsonb_build_object('macs', jsonb_build_array('3c:ec:ef:' || lpad(to_hex(i), 6, '0')))
       FROM generate_series(1, $4::int) i`,
    [t.tenantId, t.siteId, t.poolId, MACHINES],
  );
  await pool.query(
    `INSERT INTO node_certs (serial, node_id, identity_generation, role, spki_sha256, der, not_before, not_after)
     SELECT 'serial' || i, 'node_card' || i, 1, 'node', sha256(('k' || i)::bytea), '\\x00'::bytea, now(), now() + (i % 48) * interval '1 hour' + interval '1 minute'
       FROM generate_series(1, $1::int) i`,
    [MACHINES],
  );
  await pool.query(
    `INSERT INTO join_requests (id, tenant_id, site_id, attestor, state, machine_key, csr_sha256, expires_at, created_at, decided_at)
     SELECT 'jreq_card' || i, $1, $2, 'discovery', (ARRAY['pending', 'rejected', 'consumed'])[1 + i % 3], 'mk' || i, md5(i::text),
            now() + interval '1 day', now() - (i % 100) * interval '1 minute', CASE WHEN i % 3 = 0 THEN NULL ELSE now() END
       FROM generate_series(1, $3::int) i`,
    [t.tenantId, t.siteId, MACHINES],
  );
}, 120_000);

afterAll(async () => {
  await pool?.end();
  await database?.close();
});

describe('label cardinality under 10,000 distinct machines', () => {
  it('the per-instance counters: a bounded number of series whatever the machines send', async () => {
    const metrics = createApiMetrics();
    const macs: string[] = [];
    for (let i = 0; i < MACHINES; i++) {
      const mac = randomMac();
      macs.push(mac);
      const started = performance.now();
      // What a hostile or broken agent controls: the role string and attestor name of its body.
      recordJoin(
        metrics,
        { attestor: i % 2 ? 'join-token' : `att-${mac}`, role: i % 3 ? 'node' : `r${i}`, outcome: 'refused', reason: `join-token:m${i}` },
        started,
      );
      recordJoin(metrics, { attestor: 'discovery', role: 'discovery', outcome: i % 2 ? 'pending' : 'admitted', reason: mac }, started);
      recordRenewal(metrics, i % 2 ? 'renewed' : 'refused', `r-${mac}`, started);
    }
    const text = await metrics.registry.metrics();
    const families = parsePrometheusText(text);
    const series = (name: string) => families.get(name)!.samples.length;
    // attestor {join-token, other} x role {node, other} x reasons (at most 128 distinct, then `other`).
    expect(series('better_compute_joins_total')).toBeLessThanOrEqual(2 * 2 * 129 + 4);
    expect(series('better_compute_renewals_total')).toBeLessThanOrEqual(130);
    const joinDurationSeries = families
      .get('better_compute_join_duration_seconds')!
      .samples.filter((s) => s.name.endsWith('_count')).length;
    expect(joinDurationSeries).toBeLessThanOrEqual(5 * 5);
    for (const mac of macs.slice(0, 200)) expect(text).not.toContain(mac);
    expect(text.split('\n').length).toBeLessThan(2_000);
  });

  it('the shared gauges: series per pool, site and state, never per node or request', async () => {
    const registry = new Registry();
    const state = new SharedStateReader(() => readSharedState(pool));
    registerSharedCollectors(registry, state, () => pool);
    const text = await registry.metrics();
    const families = parsePrometheusText(text);
    const values = (name: string) => Object.fromEntries(families.get(name)!.samples.map((s) => [JSON.stringify(s.labels), s.value]));
    expect(values('better_compute_nodes')).toEqual({
      [JSON.stringify({ pool: t.poolId, state: 'adopting' })]: 3333,
      [JSON.stringify({ pool: t.poolId, state: 'adopted' })]: 3334,
      [JSON.stringify({ pool: t.poolId, state: 'retired' })]: 3333,
    });
    // Live (not retired) nodes whose certificate ends within the window: hours 0..47 + 1 minute, 1 in 48 per hour.
    const expiring = values('better_compute_node_certificates_expiring');
    expect(Object.keys(expiring)).toHaveLength(3);
    const live = (maxHour: number) =>
      Array.from({ length: MACHINES }, (_, k) => k + 1).filter((i) => i % 3 !== 2 && (i % 48) * 3600 + 60 <= maxHour * 3600).length;
    expect(expiring[JSON.stringify({ pool: t.poolId, within: '1h' })]).toBe(live(1));
    expect(expiring[JSON.stringify({ pool: t.poolId, within: '6h' })]).toBe(live(6));
    expect(expiring[JSON.stringify({ pool: t.poolId, within: '24h' })]).toBe(live(24));
    expect(Object.keys(values('better_compute_join_requests'))).toHaveLength(3);
    expect(families.get('better_compute_join_request_wait_seconds')!.samples.length).toBe(2 * (9 + 1 + 2));
    expect(values('better_compute_join_request_oldest_pending_seconds')[JSON.stringify({ site: t.siteId })]).toBeGreaterThanOrEqual(
      99 * 60 - 5,
    );
    expect(text).not.toMatch(/node_card|jreq_card|3c:ec:ef/);
    expect(text.split('\n').length).toBeLessThan(200);
  });
});

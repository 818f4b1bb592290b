/**
 * `npm run bench:overview`: the console overview's data (`overview.get`) and the shared gauges of GET /metrics
 * (`readSharedState`) on a large fleet, in process against a fresh embedded database (fsync on).
 *
 * Seeds (not measured): one tenant with 4 sites and 20 pools, `--nodes` nodes (default 100,000), each with its
 * join certificate and half of them with a renewal, `--events` events (default 1,000,000) spread over 8 days
 * (joins, refusals of 12 reasons, join requests created, refused renewals, and other types), and one join
 * request per 20 nodes, most of them decided. Rows are inserted with INSERT … SELECT, so the rollup triggers
 * run as they would for batches, once per statement.
 *
 * Then `--iterations` times each (default 200): overview.get for 24 h and for 7 days, and readSharedState;
 * prints p50 / p99 / max in ms as JSON. Nothing here asserts a speed; the machine may be shared.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { percentile } from '../agent/sim/percentiles';
import { principalOf } from '../server/authz/principal';
import { projectResource, resource } from '../server/authz/authorize';
import { createDb } from '../server/db/client';
import { createPgPool } from '../server/db/pg';
import { startEmbeddedDatabase } from '../server/db/embedded';
import { migrate } from '../server/db/migrate';
import { newId } from '../server/ids';
import { readSharedState } from '../server/metrics/shared-state';
import { getOverview } from '../server/overview/overview';
import { createPool } from '../server/pools/pools';
import { createSite } from '../server/sites/sites';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '100000' },
    events: { type: 'string', default: '1000000' },
    iterations: { type: 'string', default: '200' },
  },
});
const NODES = Number(values.nodes);
const EVENTS = Number(values.events);
const ITERATIONS = Number(values.iterations);
const log = (line: string) => process.stderr.write(line + '\n');
const round = (n: number) => Math.round(n * 100) / 100;

async function timed(label: string, run: () => Promise<unknown>) {
  for (let i = 0; i < 5; i++) await run(); // warm the plans and the cache
  const ms: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const started = performance.now();
    await run();
    ms.push(performance.now() - started);
  }
  return { label, p50: round(percentile(ms, 50)), p99: round(percentile(ms, 99)), max: round(Math.max(...ms)) };
}

async function main() {
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-bench-overview-'));
  const database = await startEmbeddedDatabase(dir);
  try {
    await migrate(database.url);
    const db = createDb(database.url);
    const pool = createPgPool(database.url, 8);
    const tenantId = newId('tnt');
    await db.$transaction(async (tx) => {
      await tx.tenant.create({ data: { id: tenantId, name: 'bench-overview' } });
      await projectResource(tx, resource.tenant(tenantId), tenantId);
    });
    const admin = principalOf('operator', newId('op'), [[tenantId, 'admin']]);
    const sites: string[] = [];
    const pools: string[] = [];
    for (let s = 0; s < 4; s++) {
      const site = await createSite(db, admin, { tenantId, name: `site-${s}` });
      sites.push(site.id);
      for (let p = 0; p < 5; p++)
        pools.push((await createPool(db, admin, { tenantId, siteId: site.id, name: `pool-${s}-${p}`, agent: 'bcd' })).id);
    }
    const poolSite = pools.map((_, i) => sites[Math.floor(i / 5)]!);

    log(`seeding ${NODES} nodes and their certificates…`);
    const seedStarted = performance.now();
    for (let from = 1; from <= NODES; from += 50_000) {
      const to = Math.min(NODES, from + 49_999);
      await pool.query(
        `INSERT INTO nodes (id, tenant_id, site_id, pool_id, role, state, trust, attestor, claims, created_at)
         SELECT 'node_b' || i, $1, ($2::text[])[1 + i % 20], ($3::text[])[1 + i % 20], 'node', CASE WHEN i % 50 = 0 THEN 'retired' ELSE 'adopted' END,
                'tenant-owned', 'join-token', '{}', now() - (i % 192) * interval '1 hour'
           FROM generate_series($4::int, $5::int) i`,
        [tenantId, poolSite, pools, from, to],
      );
      // The join's certificate, then a renewal for every other node (the rollup counts it as one).
      await pool.query(
        `INSERT INTO node_certs (serial, node_id, identity_generation, role, spki_sha256, der, not_before, not_after, created_at)
         SELECT 'sj' || i, 'node_b' || i, 1, 'node', sha256(('j' || i)::bytea), '\\x00'::bytea, now() - interval '20 hours', now() + (i % 30) * interval '1 hour' - interval '20 hours', now() - (i % 168) * interval '1 hour'
           FROM generate_series($1::int, $2::int) i`,
        [from, to],
      );
      await pool.query(
        `INSERT INTO node_certs (serial, node_id, identity_generation, role, spki_sha256, der, not_before, not_after, created_at)
         SELECT 'sr' || i, 'node_b' || i, 1, 'node', sha256(('r' || i)::bytea), '\\x00'::bytea, now(), now() + (i % 24) * interval '1 hour' + interval '10 minutes', now() - (i % 168) * interval '1 hour'
           FROM generate_series($1::int, $2::int) i WHERE i % 2 = 0`,
        [from, to],
      );
    }
    log(`seeding ${EVENTS} events…`);
    const reasons = [
      'join-token:unknown',
      'join-token:secret-mismatch',
      'join-token:revoked',
      'join-token:expired',
      'join-token:exhausted',
      'join-token:role-mismatch',
      'join:token',
      'join:expect',
      'join:placeholder-hardware',
      'join:reclaim',
      'join:pool',
      'join:malformed',
    ];
    for (let from = 1; from <= EVENTS; from += 100_000) {
      const to = Math.min(EVENTS, from + 99_999);
      await pool.query(
        `INSERT INTO events (tenant_id, type, data, created_at)
         SELECT $1,
                (ARRAY['node.joined', 'security.join.refused', 'security.join.refused', 'security.join.refused', 'node.adopted', 'node.join-request.created', 'security.renew.refused', 'node.connected', 'security.join-token.created', 'audit.other'])[1 + i % 10],
                CASE i % 10
                  WHEN 0 THEN jsonb_build_object('nodeId', 'node_b' || i, 'attestor', CASE WHEN i % 7 = 0 THEN 'discovery' ELSE 'join-token' END)
                  WHEN 1 THEN jsonb_build_object('attestor', 'join-token', 'reason', ($2::text[])[1 + i % 12], 'suppressed', i % 3)
                  WHEN 2 THEN jsonb_build_object('attestor', 'join-token', 'reason', ($2::text[])[1 + (i / 10) % 12], 'suppressed', 0)
                  WHEN 3 THEN jsonb_build_object('attestor', 'discovery', 'reason', 'discovery:unknown-machine', 'suppressed', 0)
                  WHEN 5 THEN jsonb_build_object('requestId', 'jreq_b' || i, 'attestor', 'discovery')
                  WHEN 6 THEN jsonb_build_object('reason', (ARRAY['expired', 'revoked', 'pop', 'clock'])[1 + i % 4], 'suppressed', 0)
                  ELSE jsonb_build_object('nodeId', 'node_b' || i)
                END,
                now() - ((i::float8 / $4) * 192) * interval '1 hour'
           FROM generate_series($3::int, $5::int) i`,
        [tenantId, reasons, from, EVENTS, to],
      );
    }
    const requests = Math.ceil(NODES / 20);
    await pool.query(
      `INSERT INTO join_requests (id, tenant_id, site_id, attestor, state, machine_key, csr_sha256, expires_at, created_at, decided_at)
       SELECT 'jreq_b' || i, $1, ($2::text[])[1 + i % 4], 'discovery', (ARRAY['pending', 'consumed', 'rejected', 'consumed'])[1 + i % 4], 'mk' || i, md5(i::text),
              now() + interval '1 day' - (i % 200) * interval '1 hour', now() - (i % 200) * interval '1 hour',
              CASE WHEN i % 4 = 0 THEN NULL ELSE now() - (i % 200) * interval '1 hour' + (i % 90) * interval '1 minute' END
         FROM generate_series(1, $3::int) i`,
      [tenantId, sites, requests],
    );
    await pool.query('VACUUM ANALYZE');
    const seededSeconds = round((performance.now() - seedStarted) / 1000);
    const sizes = (
      await pool.query(`SELECT (SELECT count(*) FROM events)::int AS events, (SELECT count(*) FROM nodes)::int AS nodes,
      (SELECT count(*) FROM node_certs)::int AS certificates, (SELECT count(*) FROM join_requests)::int AS requests, (SELECT count(*) FROM overview_hourly)::int AS rollup_rows`)
    ).rows[0];
    log(`seeded in ${seededSeconds} s: ${JSON.stringify(sizes)}; measuring…`);

    const results = [
      await timed('overview.get 24h', () => getOverview(db, admin, { tenantId, range: '24h' })),
      await timed('overview.get 7d', () => getOverview(db, admin, { tenantId, range: '7d' })),
      await timed('metrics shared state (uncached)', () => readSharedState(pool)),
    ];
    const week = await getOverview(db, admin, { tenantId, range: '7d' });
    const total = (parts: Array<{ counts: number[] }>) => parts.reduce((sum, p) => sum + p.counts.reduce((a, b) => a + b, 0), 0);
    process.stdout.write(
      JSON.stringify(
        {
          nodes: NODES,
          events: EVENTS,
          iterations: ITERATIONS,
          seededSeconds,
          sizes,
          results,
          weekTotals: {
            admitted: total(week.joins.admitted),
            refused: total(week.joins.refused),
            renewed: week.renewals.renewed.reduce((a, b) => a + b, 0),
          },
        },
        null,
        2,
      ) + '\n',
    );
    await pool.end();
    await db.$disconnect();
  } finally {
    await database.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:overview failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});

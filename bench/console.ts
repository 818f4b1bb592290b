/**
 * `npm run bench:console`: the console's first useful content on every page, at fleet scale. One tenant on the
 * embedded database (fsync on) is seeded with SQL (fast, and beside the point of what is measured):
 * `--pending` (10,000) pending join requests, `--nodes` (100,000) adopted nodes with a certificate each and a
 * `node.joined` event each, 1,000 refused joins, a join token and 100 expected machines. Then the production
 * server (Next's build in `.next`, built when absent) and Debian's Chromium, signed in as an admin, load each
 * page `--navigations` times (10, after a warm-up) and time the navigation to the page's first row (or its
 * answer that there is none) on screen: p50 / p99 per page (bench/console-first-row.ts).
 *
 * Nothing here asserts a speed; the numbers are printed as JSON with the load average at the start and the end
 * (the machine running it may be shared). Options: --pending 10000 --nodes 100000 --navigations 10
 * --pages overview,nodes (a subset, by name).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { projectResource, resource } from '../server/authz/authorize';
import { principalOf } from '../server/authz/principal';
import { createDb } from '../server/db/client';
import { startEmbeddedDatabase } from '../server/db/embedded';
import { createPgPool } from '../server/db/pg';
import { migrate } from '../server/db/migrate';
import { importExpectedMachines } from '../server/expected/expected';
import { newId } from '../server/ids';
import { createPool } from '../server/pools/pools';
import { createSite } from '../server/sites/sites';
import { issueJoinToken } from '../server/tokens/issue';
import { measureConsolePages, type ConsolePageProbe } from './console-first-row';

const { values } = parseArgs({
  options: {
    pending: { type: 'string', default: '10000' },
    nodes: { type: 'string', default: '100000' },
    navigations: { type: 'string', default: '10' },
    pages: { type: 'string' },
  },
});
const PENDING = Number(values.pending);
const NODES = Number(values.nodes);
const NAVIGATIONS = Number(values.navigations);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const round = (n: number) => Math.round(n * 100) / 100;
const loadAverage = () => loadavg().map((n) => round(n));
const log = (line: string) => process.stderr.write(line + '\n');

/** A list's first row, or the answer that it has none (an empty list's callout; not a loading state, not an error). */
const FIRST_ROW = 'main tbody tr, main .callout:not(.callout-error)';

function probes(ids: { tenantId: string; siteId: string; poolId: string; nodeId: string }): ConsolePageProbe[] {
  const t = `tenant=${ids.tenantId}`;
  return [
    { name: 'overview', path: `/?${t}`, selector: '.overview-grid' },
    { name: 'pools', path: `/pools?${t}`, selector: FIRST_ROW },
    { name: 'join tokens', path: `/join-tokens?${t}`, selector: FIRST_ROW },
    { name: 'join requests', path: `/join-requests?${t}`, selector: 'tbody tr[id^="request-row-"]', noteTestId: 'queue-count' },
    { name: 'nodes', path: `/nodes?${t}`, selector: FIRST_ROW },
    { name: 'node', path: `/nodes/${ids.nodeId}?${t}`, selector: 'main table' },
    { name: 'refused joins', path: `/refused-joins?${t}`, selector: FIRST_ROW },
    { name: 'events', path: `/events?${t}`, selector: FIRST_ROW },
    { name: 'audit', path: `/audit?${t}`, selector: FIRST_ROW },
    { name: 'approval rules', path: `/approval-rules?${t}`, selector: FIRST_ROW },
    { name: 'expected machines', path: `/expected-machines?${t}`, selector: FIRST_ROW },
    { name: 'webhooks', path: `/webhooks?${t}`, selector: FIRST_ROW },
    { name: 'operators', path: `/access/operators?${t}`, selector: FIRST_ROW },
    { name: 'api keys', path: `/access/api-keys?${t}`, selector: FIRST_ROW },
    { name: 'tenants', path: `/access/tenants?${t}`, selector: FIRST_ROW },
    { name: 'account', path: `/account?${t}`, selector: 'main section' },
  ];
}

async function main() {
  const loadAtStart = loadAverage();
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-bench-console-db-'));
  const database = await startEmbeddedDatabase(dir);
  try {
    await migrate(database.url);
    const db = createDb(database.url);
    const sql = createPgPool(database.url, 4);
    const tenantId = newId('tnt');
    await db.$transaction(async (tx) => {
      await tx.tenant.create({ data: { id: tenantId, name: `bench-${randomBytes(3).toString('hex')}` } });
      await projectResource(tx, resource.tenant(tenantId), tenantId);
    });
    const admin = principalOf('operator', newId('op'), [[tenantId, 'admin']]);
    const site = await createSite(db, admin, { tenantId, name: 'pxe' });
    const pool = await createPool(db, admin, { tenantId, siteId: site.id, name: 'intake', agent: 'bcd' });

    const seeded = performance.now();
    log(`seeding ${PENDING} pending requests, ${NODES} nodes with a certificate and an event each, 1,000 refused joins…`);
    await sql.query(
      `INSERT INTO join_requests (id, tenant_id, site_id, attestor, state, machine_key, csr_sha256, mac, claims, expires_at, created_at)
       SELECT 'jreq_bench' || i, $1, $2, 'discovery', 'pending', 'mk' || i, md5(i::text), m.mac,
              jsonb_build_object('hostname', 'sim-' || i, 'macs', jsonb_build_array(m.mac), 'productSerial', 'SN-' || i,
                                 'sysVendor', 'Dell Inc.', 'productName', 'PowerEdge R760'),
              now() + interval '1 day', now() - (i % 1440) * interval '1 minute'
         FROM generate_series(1, $3::int) i, LATERAL (SELECT '3c:ec:ef:' || regexp_replace(lpad(to_hex(i), 6, '0'), '(..)(..)(..)', '\\1:\\2:\\3') AS mac) m`,
      [tenantId, site.id, PENDING],
    );
    await sql.query(
      `INSERT INTO nodes (id, tenant_id, site_id, pool_id, role, state, trust, attestor, claims, created_at)
       SELECT 'node_bench' || i, $1, $2, $3, 'node', 'adopted', 'tenant-owned', 'join-token',
              jsonb_build_object('hostname', 'node-' || i, 'macs', jsonb_build_array('5c:ec:ef:' || regexp_replace(lpad(to_hex(i), 6, '0'), '(..)(..)(..)', '\\1:\\2:\\3'))),
              now() - (i % 10080) * interval '1 minute'
         FROM generate_series(1, $4::int) i`,
      [tenantId, site.id, pool.id, NODES],
    );
    await sql.query(
      `INSERT INTO node_certs (serial, node_id, identity_generation, role, spki_sha256, der, not_before, not_after)
       SELECT 'serial' || i, 'node_bench' || i, 1, 'node', sha256(('k' || i)::bytea), '\\x00'::bytea, now() - interval '1 day',
              now() + (i % 720) * interval '1 hour' + interval '1 minute'
         FROM generate_series(1, $1::int) i`,
      [NODES],
    );
    await sql.query(
      `INSERT INTO events (tenant_id, type, data, created_at)
       SELECT $1, 'node.joined', jsonb_build_object('nodeId', 'node_bench' || i, 'poolId', $2::text, 'attestor', 'join-token'),
              now() - (i % 10080) * interval '1 minute'
         FROM generate_series(1, $3::int) i`,
      [tenantId, pool.id, NODES],
    );
    await sql.query(
      `INSERT INTO events (tenant_id, type, data, created_at)
       SELECT $1, 'security.join.refused', jsonb_build_object('reason', (ARRAY['join-token:unknown', 'join-token:expired', 'discovery:mac-unknown'])[1 + i % 3],
              'attestor', 'join-token', 'suppressed', 0), now() - (i % 1440) * interval '1 minute'
         FROM generate_series(1, 1000) i`,
      [tenantId],
    );
    await db.$transaction((tx) =>
      issueJoinToken(tx, {
        tenantId,
        poolId: pool.id,
        siteId: site.id,
        role: 'node',
        ttlSeconds: 86_400,
        maxUses: 100,
        createdBy: admin.actor,
      }),
    );
    await importExpectedMachines(db, admin, {
      tenantId,
      siteId: site.id,
      format: 'json',
      content: JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ serial: `EXP-${i}`, hostname: `expected-${i}` }))),
      defaultPoolId: pool.id,
      preview: false,
      rowOffset: 0,
    });
    await sql.query('VACUUM ANALYZE');
    await sql.query('CHECKPOINT');
    const seedSeconds = round((performance.now() - seeded) / 1000);
    log(`seeded in ${seedSeconds} s; loading each page ${NAVIGATIONS} times…`);

    const wanted = values.pages?.split(',').map((name) => name.trim());
    const pages = probes({ tenantId, siteId: site.id, poolId: pool.id, nodeId: `node_bench${Math.max(1, Math.floor(NODES / 2))}` }).filter(
      (probe) => !wanted || wanted.includes(probe.name),
    );
    const loadBeforeConsole = loadAverage();
    const results = await measureConsolePages({
      root: repoRoot,
      db,
      databaseUrl: database.url,
      tenantId,
      navigations: NAVIGATIONS,
      pages,
      log,
    });
    const p99s = Object.values(results).map((r) => r.p99Ms);
    process.stdout.write(
      JSON.stringify(
        {
          pending: PENDING,
          nodes: NODES,
          navigations: NAVIGATIONS,
          seedSeconds,
          loadAverage: { start: loadAtStart, beforeConsole: loadBeforeConsole, end: loadAverage() },
          goal: {
            firstUsefulContentP99Ms: 1000,
            worstP99Ms: Math.max(...p99s),
            pagesWithin: p99s.filter((p) => p <= 1000).length,
            pages: p99s.length,
          },
          pages: results,
        },
        null,
        2,
      ) + '\n',
    );
    await sql.end();
    await db.$disconnect();
  } finally {
    await database.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  log(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});

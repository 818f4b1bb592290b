/**
 * `npm run bench:nodes`: the fleet view at 100,000 nodes, in-process against the embedded database (fsync on).
 * One tenant is seeded with SQL (fast, and beside the point of what is measured): `--nodes` (100,000) nodes in 20
 * pools, each with a hostname, serials, a product UUID, two MACs and two labels, a certificate end spread over a
 * month, a fifth with a hardware key, every tenth admitted through a join request from its own IP address.
 *
 * 1. `nodes.list` (the domain function the tRPC and REST routes call), first page of 100 with its exact total,
 *    `--lists` (200) times per case after a warm-up: no filter, a deep page (cursor), searches by hostname,
 *    serial, product UUID, MAC (with dashes), IP and a broad prefix matching about a tenth of the fleet, a label,
 *    and several filters together: p50 / p99 and the total.
 * 2. The CSV export of the whole fleet, streamed: seconds, rows per second and the growth of the heap.
 * 3. The console's nodes page (production server, Chromium at 1440 px), `--navigations` (10) times each, unfiltered,
 *    with a search and with a label in the URL: time to the first row (bench/console-first-row.ts).
 *
 * Nothing here asserts a speed; the numbers are printed as JSON with the load average (the machine may be
 * shared). Options: --nodes 100000 --lists 200 --navigations 10 (0 skips the console), --explain (the plans).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { percentile } from '../agent/sim/percentiles';
import { projectResource, resource } from '../server/authz/authorize';
import { principalOf } from '../server/authz/principal';
import { createDb, type Db } from '../server/db/client';
import { startEmbeddedDatabase } from '../server/db/embedded';
import { createPgPool } from '../server/db/pg';
import { migrate } from '../server/db/migrate';
import { newId } from '../server/ids';
import { exportNodesCsv } from '../server/nodes/export';
import { listNodes } from '../server/nodes/nodes';
import { createPool } from '../server/pools/pools';
import { createSite } from '../server/sites/sites';
import type { NodeFilter } from '../protocol/api/node-filter';
import { measureConsolePages } from './console-first-row';
import { typed } from '../server/db/typed';
import { nodeCountQuery, nodePageQuery } from '../server/nodes/node-filter';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '100000' },
    lists: { type: 'string', default: '200' },
    navigations: { type: 'string', default: '10' },
    explain: { type: 'boolean', default: false },
  },
});
const NODES = Number(values.nodes);
const LISTS = Number(values.lists);
const NAVIGATIONS = Number(values.navigations);
const POOLS = 20;
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const round = (n: number) => Math.round(n * 100) / 100;
const loadAverage = () => loadavg().map((n) => round(n));
const log = (line: string) => process.stderr.write(line + '\n');

/** Machine `i`'s MAC: `5c:ec:ef:` and i in six hex digits. */
const macOf = (i: number) =>
  `5c:ec:ef:${i
    .toString(16)
    .padStart(6, '0')
    .replace(/(..)(..)(..)/, '$1:$2:$3')}`;

/** `--explain`: the plans of a case's page and count statements (stderr), to see which index each reads. */
async function explain(
  db: Db,
  sql: ReturnType<typeof createPgPool>,
  tenantId: string,
  name: string,
  filter: NodeFilter & { cursor?: string },
) {
  for (const statement of [
    nodePageQuery(typed(db), tenantId, filter, { after: filter.cursor, limit: 101 }).select('n.id').compile(),
    nodeCountQuery(typed(db), tenantId, filter).compile(),
  ]) {
    const plan = await sql.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${statement.sql}`, [...statement.parameters]);
    log(`-- ${name}\n${plan.rows.map((r) => r['QUERY PLAN']).join('\n')}`);
  }
}

async function main() {
  const loadAtStart = loadAverage();
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-bench-nodes-'));
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
    const site = await createSite(db, admin, { tenantId, name: 'dc-1' });
    const pools: string[] = [];
    for (let p = 0; p < POOLS; p++)
      pools.push((await createPool(db, admin, { tenantId, siteId: site.id, name: `pool-${p}`, agent: 'bcd' })).id);

    const seeded = performance.now();
    log(`seeding ${NODES} nodes in ${POOLS} pools, a join request for every tenth…`);
    await sql.query(
      `INSERT INTO nodes (id, tenant_id, site_id, pool_id, role, state, trust, attestor, claims, labels, hardware_key, hardware_key_trusted,
                          trust_version, cert_not_after, created_at)
       SELECT 'node_bench' || lpad(i::text, 7, '0'), $1, $2, ($3::text[])[1 + i % ${POOLS}], 'node',
              CASE WHEN i % 50 = 0 THEN 'adopting' ELSE 'adopted' END, 'tenant-owned', 'join-token',
              jsonb_build_object('hostname', 'node-' || i || '.dc1.example', 'productSerial', 'SN' || lpad(i::text, 8, '0'),
                                 'productUuid', md5('uuid' || i)::uuid::text,
                                 'macs', jsonb_build_array('5c:ec:ef:' || regexp_replace(lpad(to_hex(i), 6, '0'), '(..)(..)(..)', '\\1:\\2:\\3'),
                                                           '6c:ec:ef:' || regexp_replace(lpad(to_hex(i), 6, '0'), '(..)(..)(..)', '\\1:\\2:\\3')),
                                 'sysVendor', 'Dell Inc.', 'productName', 'PowerEdge R760'),
              jsonb_build_object('rack', 'r' || (i % 400), 'env', (ARRAY['prod', 'staging', 'dev'])[1 + i % 3]),
              CASE WHEN i % 5 = 0 THEN decode(lpad(to_hex(i), 8, '0'), 'hex') END, i % 10 = 0, 1 + i % 3,
              now() + (i % 720) * interval '1 hour', now() - (i % 10080) * interval '1 minute'
         FROM generate_series(1, $4::int) i`,
      [tenantId, site.id, pools, NODES],
    );
    await sql.query(
      `INSERT INTO join_requests (id, tenant_id, site_id, attestor, state, machine_key, csr_sha256, ip, client_address, node_id, expires_at)
       SELECT 'jreq_bench' || i, $1, $2, 'discovery', 'approved', 'mk' || i, md5(i::text),
              '10.' || (i / 65536) % 256 || '.' || (i / 256) % 256 || '.' || i % 256, '192.0.2.1', 'node_bench' || lpad(i::text, 7, '0'),
              now() + interval '1 day'
         FROM generate_series(10, $3::int, 10) i`,
      [tenantId, site.id, NODES],
    );
    await sql.query('VACUUM ANALYZE');
    await sql.query('CHECKPOINT');
    const seedSeconds = round((performance.now() - seeded) / 1000);

    const mid = Math.floor(NODES / 2);
    const probe = 40_010; // an address-carrying node (every tenth)
    const cases: Array<[string, NodeFilter & { cursor?: string }]> = [
      ['all', {}],
      ['deep page (cursor)', { cursor: `node_bench${String(mid).padStart(7, '0')}` }],
      ['search hostname', { search: `node-${mid}.dc1` }],
      ['search serial', { search: `SN${String(mid).padStart(8, '0')}` }],
      [
        'search product UUID',
        { search: (await sql.query<{ u: string }>(`SELECT md5('uuid' || $1::int)::uuid::text AS u`, [mid])).rows[0]!.u },
      ],
      ['search MAC with dashes', { search: macOf(mid).replaceAll(':', '-').toUpperCase() }],
      ['search IP', { search: `10.${(probe >> 16) % 256}.${(probe >> 8) % 256}.${probe % 256}` }],
      ['search broad (node-1)', { search: 'node-1' }],
      ['label', { labels: ['rack=r7'] }],
      ['pool + state + label', { poolId: pools[3], state: 'adopted', labels: ['env=prod'] }],
      ['trusted key + expiring within 1 day', { nodeKey: 'trusted', expiringWithinSeconds: 86_400 }],
      ['disconnected', { connected: false }],
    ];
    const lists: Record<string, { p50Ms: number; p99Ms: number; total: number; items: number }> = {};
    for (const [name, filter] of cases) {
      const input = { tenantId, limit: 100, direction: 'forward' as const, ...filter };
      await listNodes(db, admin, input);
      const times: number[] = [];
      let answer = await listNodes(db, admin, input);
      for (let i = 0; i < LISTS; i++) {
        const started = performance.now();
        answer = await listNodes(db, admin, input);
        times.push(performance.now() - started);
      }
      if (values.explain) await explain(db, sql, tenantId, name, filter);
      lists[name] = {
        p50Ms: round(percentile(times, 50)),
        p99Ms: round(percentile(times, 99)),
        total: answer.total,
        items: answer.items.length,
      };
      log(`  ${name}: p99 ${lists[name].p99Ms} ms (${answer.total} match)`);
    }

    log(`exporting all ${NODES} nodes as CSV…`);
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    let heapPeak = heapBefore;
    let bytes = 0;
    let rows = -1;
    let largestChunkBytes = 0;
    const exportStarted = performance.now();
    for await (const chunk of await exportNodesCsv(db, admin, { tenantId })) {
      bytes += chunk.length;
      largestChunkBytes = Math.max(largestChunkBytes, chunk.length);
      rows += chunk.split('\r\n').length - 1;
      heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
    }
    const exportSeconds = (performance.now() - exportStarted) / 1000;

    let consolePages: Awaited<ReturnType<typeof measureConsolePages>> | { skipped: string } = { skipped: '--navigations 0' };
    if (NAVIGATIONS > 0) {
      const t = `tenant=${tenantId}`;
      const firstRow = 'main tbody tr, main .callout:not(.callout-error)';
      consolePages = await measureConsolePages({
        root: repoRoot,
        db,
        databaseUrl: database.url,
        tenantId,
        navigations: NAVIGATIONS,
        pages: [
          { name: 'nodes', path: `/nodes?${t}`, selector: firstRow },
          { name: 'nodes searched', path: `/nodes?${t}&q=${encodeURIComponent(macOf(mid))}`, selector: firstRow },
          { name: 'nodes by label', path: `/nodes?${t}&label=rack%3Dr7`, selector: firstRow },
        ],
        log,
      });
    }

    const p99s = Object.values(lists).map((l) => l.p99Ms);
    process.stdout.write(
      JSON.stringify(
        {
          nodes: NODES,
          lists: LISTS,
          seedSeconds,
          loadAverage: { start: loadAtStart, end: loadAverage() },
          goal: { listP99Ms: 100, worstListP99Ms: Math.max(...p99s), consoleFirstRowP99Ms: 1000 },
          list: lists,
          export: {
            rows,
            megabytes: round(bytes / 1e6),
            seconds: round(exportSeconds),
            rowsPerSecond: Math.round(rows / exportSeconds),
            // What one pull holds (a batch of 1,000 rows), against the whole file above.
            largestChunkKilobytes: round(largestChunkBytes / 1e3),
            // Peak heap growth while streaming; it includes garbage not yet collected.
            heapPeakGrowthMegabytes: round((heapPeak - heapBefore) / 1e6),
          },
          console: consolePages,
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

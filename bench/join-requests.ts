/**
 * `npm run bench:join-requests`: the join-request queue at scale, in-process against the embedded
 * database (fsync on). Phases:
 *
 * 1. N simulated PXE machines (default 10,000), each with its own discovery token, join through the
 *    discovery attestor at once (`--agents` in flight): every one is recorded as a pending request and
 *    answered with the signed `pending` body. Reports pending answers per second.
 * 2. The first page (100) of `joinRequests.list` with N pending, `--lists` times: p50 / p99; then the
 *    same with a search (a hostname prefix matching about a ninth of them, and one MAC), with the total.
 * 3. The approval of all N by filter, the next 200 matching per call until none remain (what the console's
 *    "select all matching" and `approve --all-pending` send). Reports decisions per second.
 *
 * 4. The cost of approval rules: `--rule-machines` (2,000) new machines on a site without rules and as many
 *    on a site with 51 (50 that do not match, then one that leaves the machine for a person: the same
 *    pending answer), sent alternately in rounds of 250; server and PostgreSQL CPU per join of each, the
 *    overhead in percent; and as many admitted at once by an approving rule (a certificate each).
 *
 * Nothing here asserts a speed; the numbers are printed as JSON. The machine running it may be shared.
 * Options: --machines 10000 --agents 64 --lists 200 --rule-machines 2000. Joins are prepared on BETTER_COMPUTE_JOIN_THREADS
 * worker threads (default 1), as the server does.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { prepareJoinAttempt } from '../agent/join';
import { newPxeMachine } from '../agent/sim/pxe';
import { percentile } from '../agent/sim/percentiles';
import { principalOf } from '../server/authz/principal';
import { projectResource, resource } from '../server/authz/authorize';
import { createDb } from '../server/db/client';
import { createPgPool } from '../server/db/pg';
import { startEmbeddedDatabase } from '../server/db/embedded';
import { migrate } from '../server/db/migrate';
import { newId } from '../server/ids';
import { JoinService } from '../server/join/join-service';
import { DEFAULT_NEW_REQUEST_LIMITS } from '../server/join/request-admission';
import { joinThreadCount, ThreadedPreparer } from '../server/join/prepare-worker-pool';
import { createPkiBundle } from '../server/pki/bundle/bundle';
import { joinCryptoFromBundle } from '../server/pki/issuance/join-crypto';
import { createPool } from '../server/pools/pools';
import { approveJoinRequests } from '../server/requests/decisions';
import { countStatement, listJoinRequests, listStatement } from '../server/requests/list';
import { visibleTo } from '../server/requests/records';
import { Prisma } from '../server/db/generated/client';
import { createSite } from '../server/sites/sites';
import { ensureRootTenant } from '../server/tenants/tenants';
import { issueJoinToken } from '../server/tokens/issue';
import { createRule } from '../server/rules/rules';
import { readFileSync } from 'node:fs';
import { treeCpuSeconds } from './cpu';
import { measureConsoleFirstRow } from './console-first-row';
import { importExpectedMachines } from '../server/expected/expected';

const { values } = parseArgs({
  options: {
    machines: { type: 'string', default: '10000' },
    agents: { type: 'string', default: '64' },
    lists: { type: 'string', default: '200' },
    'rule-machines': { type: 'string', default: '2000' },
    explain: { type: 'boolean', default: false },
    'console-navigations': { type: 'string', default: '10' },
    'expected-machines': { type: 'string', default: '10000' },
    'webhook-seconds': { type: 'string', default: '30' },
  },
});
const N = Number(values.machines);
const AGENTS = Number(values.agents);
const LISTS = Number(values.lists);
const RULE_MACHINES = Number(values['rule-machines']);
const CONSOLE_NAVIGATIONS = Number(values['console-navigations']);
const EXPECTED_MACHINES = Number(values['expected-machines']);
const WEBHOOK_SECONDS = Number(values['webhook-seconds']);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const loadAverage = () => loadavg().map((n) => round(n));
const log = (line: string) => process.stderr.write(line + '\n');
const round = (n: number) => Math.round(n * 100) / 100;

/** CPU of this process (the server side: JoinService, its prepare threads) and of PostgreSQL, in ms. */
function cpuNow(postmaster: number) {
  const own = process.cpuUsage();
  return { server: (own.user + own.system) / 1000, pg: treeCpuSeconds(postmaster) * 1000 };
}

async function main() {
  const loadAtStart = loadAverage();
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-bench-jr-'));
  const database = await startEmbeddedDatabase(dir);
  try {
    await migrate(database.url);
    const db = createDb(database.url);
    const pool = createPgPool(database.url, 16);
    const root = await ensureRootTenant(db);
    const tenantId = newId('tnt');
    await db.$transaction(async (tx) => {
      await tx.tenant.create({ data: { id: tenantId, name: `bench-${randomBytes(3).toString('hex')}` } });
      await projectResource(tx, resource.tenant(tenantId), tenantId);
    });
    const admin = principalOf('operator', newId('op'), [[tenantId, 'admin']]);
    const site = await createSite(db, admin, { tenantId, name: 'pxe' });
    const target = await createPool(db, admin, { tenantId, siteId: site.id, name: 'intake', agent: 'bcd' });
    const crypto = joinCryptoFromBundle(createPkiBundle({ trustDomain: 'bench.example.com' }));
    const trust = {
      encryptionJwk: crypto.encryptionPublicJwk,
      signingCertificateDer: Buffer.from(crypto.signingCertificate, 'base64'),
      signingKeyPin: crypto.signingKeyPin,
    };
    const threads = joinThreadCount();
    const preparer = threads > 0 ? new ThreadedPreparer(threads) : undefined;
    // The queue at scale is filled far faster than the per-site limit on new requests allows a real site.
    const requestLimits = { ...DEFAULT_NEW_REQUEST_LIMITS, perSite: 1_000_000, perAddress: 1_000_000 };
    const service = new JoinService({
      pool,
      loadCrypto: async () => crypto,
      loadRootTenantId: async () => root.id,
      preparer,
      requestLimits,
    });

    /** Discovery tokens for `count` new PXE machines of `siteId`, and their sealed joins (agent work: not measured). */
    const sealJoins = async (siteId: string, count: number, first: number) => {
      const out: string[] = [];
      for (let start = 0; start < count; start += 500) {
        const machines = Array.from({ length: Math.min(500, count - start) }, (_, i) => newPxeMachine(first + start + i));
        const tokens = await db.$transaction(
          (tx) =>
            Promise.all(
              machines.map((m) =>
                issueJoinToken(tx, {
                  tenantId,
                  poolId: null,
                  siteId,
                  role: 'discovery',
                  ttlSeconds: 3600,
                  maxUses: 1,
                  boundMac: m.mac,
                  createdBy: 'module:boot',
                  discovery: { ip: `10.99.${(first + start) % 250}.7`, vouchedBy: 'module:boot' },
                }),
              ),
            ),
          { timeout: 120_000 },
        );
        for (const [i, m] of machines.entries()) {
          out.push(
            (
              await prepareJoinAttempt({
                token: tokens[i]!.token!,
                trust,
                claims: m.claims,
                role: 'discovery',
                attestor: 'discovery',
                keys: m.keys,
              })
            ).body,
          );
        }
        log(`  ${out.length}/${count}`);
      }
      return out;
    };
    /** Sends the joins, `AGENTS` in flight; counts the answers by status, with the server's and PostgreSQL's CPU. */
    const sendJoins = async (list: string[]) => {
      let at = 0;
      const statuses: Record<number, number> = {};
      const before = cpuNow(postmaster);
      const started = performance.now();
      await Promise.all(
        Array.from({ length: AGENTS }, async () => {
          while (at < list.length) {
            const answer = await service.joinBody(Buffer.from(list[at++]!));
            statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
          }
        }),
      );
      const after = cpuNow(postmaster);
      return {
        seconds: (performance.now() - started) / 1000,
        statuses,
        serverMs: after.server - before.server,
        pgMs: after.pg - before.pg,
      };
    };
    const postmaster = Number(readFileSync(path.join(dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);

    log(`minting ${N} discovery tokens and sealing their joins (not measured)…`);
    const bodies = await sealJoins(site.id, N, 0);

    log(`recording ${N} pending requests with ${AGENTS} joins in flight…`);
    const recorded = await sendJoins(bodies);
    const pending = recorded.statuses[200] ?? 0;
    const other = Object.fromEntries(Object.entries(recorded.statuses).filter(([status]) => status !== '200'));
    const recordSeconds = recorded.seconds;

    if (values.explain)
      await explainQueue(db, { ...target, ownerTenantId: tenantId }).catch((error: Error) => log(`explain: ${error.message}`));
    if (process.env.BENCH_HOLD_DB) {
      // Profiling: the filled database stays up for psql until this process is interrupted.
      log(`holding the database: ${database.url} pool ${target.id} site ${site.id} tenant ${tenantId}`);
      await new Promise((resolve) => process.once('SIGINT', resolve));
    }

    log(`listing the first page ${LISTS} times…`);
    const listMs: number[] = [];
    for (let i = 0; i < LISTS; i++) {
      const s = performance.now();
      await listJoinRequests(db, admin, { tenantId, poolId: target.id, state: 'pending' });
      listMs.push(performance.now() - s);
    }

    log(`listing the first page with a search, ${LISTS} times each…`);
    const searchMs: number[] = [];
    const macMs: number[] = [];
    const vendorMs: number[] = [];
    let vendorTotal = 0;
    let searchTotal = 0;
    const someMac =
      (await listJoinRequests(db, admin, { tenantId, poolId: target.id, state: 'pending', limit: 1 })).items[0]?.mac ?? '3c:ec:ef';
    for (let i = 0; i < LISTS; i++) {
      let s = performance.now();
      searchTotal = (await listJoinRequests(db, admin, { tenantId, poolId: target.id, state: 'pending', search: 'sim-1' })).total;
      searchMs.push(performance.now() - s);
      s = performance.now();
      await listJoinRequests(db, admin, {
        tenantId,
        poolId: target.id,
        state: 'pending',
        search: someMac.replaceAll(':', '-').toUpperCase(),
      });
      macMs.push(performance.now() - s);
      s = performance.now();
      vendorTotal = (await listJoinRequests(db, admin, { tenantId, poolId: target.id, state: 'pending', search: 'poweredge r760' })).total;
      vendorMs.push(performance.now() - s);
    }

    // The console: the production server on this database, Chromium signed in, /join-requests with N pending.
    let consoleFirstRow: Awaited<ReturnType<typeof measureConsoleFirstRow>> | { skipped: string } = { skipped: '--console-navigations 0' };
    if (CONSOLE_NAVIGATIONS > 0) {
      log(`the console's first row with ${N} pending, ${CONSOLE_NAVIGATIONS} navigations (production server, Chromium)…`);
      consoleFirstRow = await measureConsoleFirstRow({
        root: repoRoot,
        db,
        databaseUrl: database.url,
        tenantId,
        poolId: target.id,
        navigations: CONSOLE_NAVIGATIONS,
        searches: ['sim-1'],
        log,
      });
    }

    log(`approving all ${N} by filter, 200 per call…`);
    let approved = 0;
    let calls = 0;
    const t1 = performance.now();
    const { asOf, total } = await listJoinRequests(db, admin, { tenantId, poolId: target.id, state: 'pending', limit: 1 });
    for (;;) {
      const answer = await approveJoinRequests(db, admin, {
        tenantId,
        poolId: target.id,
        matching: { createdUpTo: asOf },
        ttlSeconds: 3600,
      });
      calls++;
      approved += answer.approved.length;
      if (!answer.remaining || !answer.approved.length) break;
    }
    const approveSeconds = (performance.now() - t1) / 1000;

    // A rule's cost: the same pending answer with and without the site's rules to weigh (50 that do not
    // match, then one that leaves the machine for a person), sent alternately in rounds so drift falls on
    // both; then a rule that admits at once (a certificate issued), for reference.
    log(`rules: ${RULE_MACHINES} joins on a site without rules, ${RULE_MACHINES} on a site with 51, alternately…`);
    const bare = await createSite(db, admin, { tenantId, name: 'bare' });
    const ruled = await createSite(db, admin, { tenantId, name: 'ruled' });
    const admitting = await createSite(db, admin, { tenantId, name: 'admitting' });
    const admitPool = await createPool(db, admin, { tenantId, siteId: admitting.id, name: 'admitted', agent: 'bcd' });
    for (let i = 0; i < 50; i++) {
      const match = [
        { hostnamePattern: `rack-${i}-*` },
        { vendors: [`Vendor ${i}`] },
        { macPrefixes: [`00:1b:${(16 + i).toString(16)}`] },
        { subnets: [`172.${16 + (i % 16)}.0.0/16`] },
        { serials: [`SN-NONE-${i}`] },
      ][i % 5]!;
      await createRule(db, admin, { tenantId, siteId: ruled.id, name: `no match ${i}`, match, action: 'reject' });
    }
    await createRule(db, admin, {
      tenantId,
      siteId: ruled.id,
      name: 'hold GPU servers',
      match: { vendors: ['Supermicro', 'Dell*'], subnets: ['10.99.0.0/16'] },
      action: 'leave',
    });
    await createRule(db, admin, {
      tenantId,
      siteId: admitting.id,
      name: 'admit GPU servers',
      match: { vendors: ['Supermicro', 'Dell*'] },
      action: 'approve',
      poolId: admitPool.id,
    });
    const bareBodies = await sealJoins(bare.id, RULE_MACHINES, N);
    const ruledBodies = await sealJoins(ruled.id, RULE_MACHINES, N + RULE_MACHINES);
    const admitBodies = await sealJoins(admitting.id, RULE_MACHINES, N + 2 * RULE_MACHINES);
    // The bulk approval above left 10,000 updated rows: vacuum them and write the dirty pages now, so that
    // neither an autovacuum nor a checkpoint lands in a few of the rounds below and weighs on one side.
    await db.$executeRawUnsafe('VACUUM ANALYZE');
    await db.$executeRawUnsafe('CHECKPOINT');
    const tally = () => ({ joins: 0, seconds: 0, serverMs: 0, pgMs: 0, statuses: {} as Record<number, number> });
    const phases = { bare: tally(), ruled: tally() };
    const ROUND = 250;
    for (let i = 0; i < RULE_MACHINES; i += ROUND) {
      for (const [name, list] of [
        ['bare', bareBodies],
        ['ruled', ruledBodies],
      ] as const) {
        const r = await sendJoins(list.slice(i, i + ROUND));
        const t = phases[name];
        t.joins += Object.values(r.statuses).reduce((a, b) => a + b, 0);
        t.seconds += r.seconds;
        t.serverMs += r.serverMs;
        t.pgMs += r.pgMs;
        for (const [k, v] of Object.entries(r.statuses)) t.statuses[Number(k)] = (t.statuses[Number(k)] ?? 0) + v;
      }
    }
    const admitted = await sendJoins(admitBodies);
    const perJoin = (t: { joins: number; seconds: number; serverMs: number; pgMs: number; statuses: Record<number, number> }) => ({
      joins: t.joins,
      statuses: t.statuses,
      perSecond: round(t.joins / t.seconds),
      cpuMsPerJoin: {
        server: round(t.serverMs / t.joins),
        postgres: round(t.pgMs / t.joins),
        total: round((t.serverMs + t.pgMs) / t.joins),
      },
    });
    const bareCost = perJoin(phases.bare);
    const ruledCost = perJoin(phases.ruled);
    const admitCost = perJoin({ joins: RULE_MACHINES, ...admitted });

    // Expected machines: one import of EXPECTED_MACHINES rows (the console and the CLI send parts of 2,000).
    let expectedImport: Record<string, unknown> = { skipped: '--expected-machines 0' };
    if (EXPECTED_MACHINES > 0) {
      log(`importing ${EXPECTED_MACHINES} expected machines in one call…`);
      const content = JSON.stringify(
        Array.from({ length: EXPECTED_MACHINES }, (_, i) => ({
          serial: `EXP-${i}`,
          mac: `58:a2:${[i >> 16, (i >> 8) & 255, i & 255, 7].map((b) => b.toString(16).padStart(2, '0')).join(':')}`,
          hostname: `expected-${i}`,
        })),
      );
      const started = performance.now();
      const answer = await importExpectedMachines(db, admin, {
        tenantId,
        siteId: admitting.id,
        format: 'json',
        content,
        defaultPoolId: admitPool.id,
        preview: false,
        rowOffset: 0,
      });
      const seconds = (performance.now() - started) / 1000;
      expectedImport = {
        rows: EXPECTED_MACHINES,
        accepted: answer.accepted,
        rejected: answer.rejected.length,
        ...(answer.rejected[0] ? { firstRejection: answer.rejected[0] } : {}),
        seconds: round(seconds),
        rowsPerSecond: round(answer.accepted / seconds),
      };
    }

    // Webhooks at 100 events/s: bench/webhooks.ts's latency phase (its own database), in this run.
    let webhooks: Record<string, unknown> = { skipped: '--webhook-seconds 0' };
    if (WEBHOOK_SECONDS > 0) {
      log(`webhooks: 100 events/s for ${WEBHOOK_SECONDS} s (bench/webhooks.ts --joins 0)…`);
      const child = spawnSync(
        process.execPath,
        ['--import', 'tsx', 'bench/webhooks.ts', '--rate', '100', '--seconds', String(WEBHOOK_SECONDS), '--joins', '0'],
        { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 16 * 1024 * 1024 },
      );
      webhooks =
        child.status === 0
          ? (JSON.parse(child.stdout) as { latency: Record<string, unknown> }).latency
          : { failed: child.status ?? child.signal };
    }

    const searchP99 = Math.max(percentile(searchMs, 99), percentile(macMs, 99), percentile(vendorMs, 99));
    const firstRow = 'skipped' in consoleFirstRow ? null : consoleFirstRow['no search'];
    const ruleOverhead = (ruledCost.cpuMsPerJoin.total / bareCost.cpuMsPerJoin.total - 1) * 100;
    const webhookP99 = typeof webhooks.p99Ms === 'number' ? webhooks.p99Ms : null;
    const goal = (value: number | null, target: number, unit: string) => ({
      value: value === null ? null : round(value),
      goal: `≤ ${target} ${unit}`,
      met: value === null ? null : value <= target,
    });
    const result = {
      loadAverage: { atStart: loadAtStart, atEnd: loadAverage() },
      goals: {
        pendingAnswersPerSecond: round(pending / recordSeconds),
        firstPageWithSearchP99Ms: goal(searchP99, 100, 'ms'),
        consoleFirstRowP99Ms: goal(firstRow ? firstRow.p99Ms : null, 1500, 'ms'),
        decideAllByFilterSeconds: goal(approveSeconds, 10, 's'),
        ruleCpuOverheadPercent: goal(ruleOverhead, 10, '%'),
        webhookDeliveryP99Ms: goal(webhookP99, 2000, 'ms'),
        expectedImportRowsPerSecond: expectedImport.rowsPerSecond ?? null,
      },
      machines: N,
      agents: AGENTS,
      prepareThreads: threads,
      pendingAnswers: pending,
      otherAnswers: other,
      pendingAnswersPerSecond: round(pending / recordSeconds),
      listFirstPage: { calls: LISTS, p50Ms: round(percentile(listMs, 50)), p99Ms: round(percentile(listMs, 99)) },
      listFirstPageSearchHostname: {
        calls: LISTS,
        matches: searchTotal,
        p50Ms: round(percentile(searchMs, 50)),
        p99Ms: round(percentile(searchMs, 99)),
      },
      listFirstPageSearchMac: { calls: LISTS, p50Ms: round(percentile(macMs, 50)), p99Ms: round(percentile(macMs, 99)) },
      listFirstPageSearchModel: {
        calls: LISTS,
        matches: vendorTotal,
        p50Ms: round(percentile(vendorMs, 50)),
        p99Ms: round(percentile(vendorMs, 99)),
      },
      approvals: approved,
      approvalsCounted: total,
      approveCalls: calls,
      approvalsPerSecond: round(approved / approveSeconds),
      approveAllByFilterSeconds: round(approveSeconds),
      pendingCpuMsPerJoin: { server: round(recorded.serverMs / N), postgres: round(recorded.pgMs / N) },
      rules: {
        pendingWithoutRules: bareCost,
        pendingLeftBy51Rules: ruledCost,
        ruleOverheadPercent: round((ruledCost.cpuMsPerJoin.total / bareCost.cpuMsPerJoin.total - 1) * 100),
        admittedByRule: admitCost,
      },
      consoleFirstRow,
      expectedImport,
      webhooks,
    };
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    await preparer?.close();
    await pool.end();
    await db.$disconnect();
  } finally {
    await database.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** `--explain`: EXPLAIN ANALYZE of the queue's statements at N pending, printed to stderr. */
async function explainQueue(db: ReturnType<typeof createDb>, pool: { id: string; siteId: string; ownerTenantId: string }) {
  const visible = visibleTo(pool);
  const asOf = new Date().toISOString();
  const show = async (label: string, statement: Prisma.Sql) => {
    const rows = await db.$queryRawUnsafe<{ 'QUERY PLAN': string }[]>(`EXPLAIN (ANALYZE, BUFFERS) ${statement.text}`, ...statement.values);
    log(`--- ${label}\n${rows.map((r) => r['QUERY PLAN']).join('\n')}`);
  };
  for (const search of [undefined, 'sim-1', '3c-ec-ef', 'poweredge r760']) {
    const filter = search ? { search } : {};
    await show(`page, search ${search ?? '(none)'}`, listStatement(pool, 'pending', Prisma.empty, 101, filter));
    await show(`count, search ${search ?? '(none)'}`, countStatement(pool, 'pending', filter));
  }
  await show(
    'matching page',
    Prisma.sql`SELECT id FROM join_requests WHERE ${visible} AND state = 'pending' AND expires_at > compute_now() AND created_at <= ${new Date(asOf)}::timestamptz ORDER BY created_at, id LIMIT 200`,
  );
}

main().catch((error) => {
  log(`bench failed: ${(error as Error).stack ?? error}`);
  process.exit(1);
});

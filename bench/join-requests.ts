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
 * Nothing here asserts a speed; the numbers are printed as JSON. The machine running it may be shared.
 * Options: --machines 10000 --agents 64 --lists 200. Joins are prepared on BETTER_COMPUTE_JOIN_THREADS
 * worker threads (default 1), as the server does.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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
import { joinThreadCount, ThreadedPreparer } from '../server/join/prepare-worker-pool';
import { createPkiBundle } from '../server/pki/bundle';
import { joinCryptoFromBundle } from '../server/pki/join-crypto';
import { createPool } from '../server/pools/pools';
import { approveJoinRequests } from '../server/requests/decisions';
import { listJoinRequests } from '../server/requests/list';
import { createSite } from '../server/sites/sites';
import { ensureRootTenant } from '../server/tenants/tenants';
import { issueJoinToken } from '../server/tokens/issue';

const { values } = parseArgs({
  options: { machines: { type: 'string', default: '10000' }, agents: { type: 'string', default: '64' }, lists: { type: 'string', default: '200' } },
});
const N = Number(values.machines);
const AGENTS = Number(values.agents);
const LISTS = Number(values.lists);
const log = (line: string) => process.stderr.write(line + '\n');
const round = (n: number) => Math.round(n * 100) / 100;

async function main() {
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
    const trust = { encryptionJwk: crypto.encryptionPublicJwk, signingCertificateDer: Buffer.from(crypto.signingCertificate, 'base64'), signingKeyPin: crypto.signingKeyPin };
    const threads = joinThreadCount();
    const preparer = threads > 0 ? new ThreadedPreparer(threads) : undefined;
    const service = new JoinService({ pool, loadCrypto: async () => crypto, loadRootTenantId: async () => root.id, preparer });

    log(`minting ${N} discovery tokens and sealing their joins (not measured)…`);
    const bodies: string[] = [];
    for (let start = 0; start < N; start += 500) {
      const machines = Array.from({ length: Math.min(500, N - start) }, (_, i) => newPxeMachine(start + i));
      const tokens = await db.$transaction(
        (tx) =>
          Promise.all(
            machines.map((m) =>
              issueJoinToken(tx, { tenantId, poolId: null, siteId: site.id, role: 'discovery', ttlSeconds: 3600, maxUses: 1, boundMac: m.mac, createdBy: 'module:boot' }),
            ),
          ),
        { timeout: 120_000 },
      );
      for (const [i, m] of machines.entries()) {
        bodies.push((await prepareJoinAttempt({ token: tokens[i]!.token!, trust, claims: m.claims, role: 'discovery', attestor: 'discovery', keys: m.keys })).body);
      }
      log(`  ${bodies.length}/${N}`);
    }

    log(`recording ${N} pending requests with ${AGENTS} joins in flight…`);
    let next = 0;
    let pending = 0;
    const other: Record<number, number> = {};
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: AGENTS }, async () => {
        while (next < bodies.length) {
          const answer = await service.joinBody(Buffer.from(bodies[next++]!));
          if (answer.status === 200) pending++;
          else other[answer.status] = (other[answer.status] ?? 0) + 1;
        }
      }),
    );
    const recordSeconds = (performance.now() - t0) / 1000;

    log(`listing the first page ${LISTS} times…`);
    const listMs: number[] = [];
    for (let i = 0; i < LISTS; i++) {
      const s = performance.now();
      await listJoinRequests(db, admin, { tenantId, poolId: target.id });
      listMs.push(performance.now() - s);
    }

    log(`listing the first page with a search, ${LISTS} times each…`);
    const searchMs: number[] = [];
    const macMs: number[] = [];
    let searchTotal = 0;
    const someMac = (await listJoinRequests(db, admin, { tenantId, poolId: target.id, limit: 1 })).items[0]?.mac ?? '3c:ec:ef';
    for (let i = 0; i < LISTS; i++) {
      let s = performance.now();
      searchTotal = (await listJoinRequests(db, admin, { tenantId, poolId: target.id, search: 'sim-1' })).total;
      searchMs.push(performance.now() - s);
      s = performance.now();
      await listJoinRequests(db, admin, { tenantId, poolId: target.id, search: someMac.replaceAll(':', '-').toUpperCase() });
      macMs.push(performance.now() - s);
    }

    log(`approving all ${N} by filter, 200 per call…`);
    let approved = 0;
    let calls = 0;
    const t1 = performance.now();
    const { asOf, total } = await listJoinRequests(db, admin, { tenantId, poolId: target.id, limit: 1 });
    for (;;) {
      const answer = await approveJoinRequests(db, admin, { tenantId, poolId: target.id, matching: { createdUpTo: asOf }, ttlSeconds: 3600 });
      calls++;
      approved += answer.approved.length;
      if (!answer.remaining || !answer.approved.length) break;
    }
    const approveSeconds = (performance.now() - t1) / 1000;

    const result = {
      machines: N,
      agents: AGENTS,
      prepareThreads: threads,
      pendingAnswers: pending,
      otherAnswers: other,
      pendingAnswersPerSecond: round(pending / recordSeconds),
      listFirstPage: { calls: LISTS, p50Ms: round(percentile(listMs, 50)), p99Ms: round(percentile(listMs, 99)) },
      listFirstPageSearchHostname: { calls: LISTS, matches: searchTotal, p50Ms: round(percentile(searchMs, 50)), p99Ms: round(percentile(searchMs, 99)) },
      listFirstPageSearchMac: { calls: LISTS, p50Ms: round(percentile(macMs, 50)), p99Ms: round(percentile(macMs, 99)) },
      approvals: approved,
      approvalsCounted: total,
      approveCalls: calls,
      approvalsPerSecond: round(approved / approveSeconds),
      approveAllByFilterSeconds: round(approveSeconds),
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

main().catch((error) => {
  log(`bench failed: ${(error as Error).stack ?? error}`);
  process.exit(1);
});

/**
 * `npm run bench:renew`: renewals through the gateway, each on its own TLS connection with its own client
 * certificate, by `--agents` concurrent agents, against the API's fast path on the embedded database (fsync
 * on, every commit durable). The same run first joins the agents through the gateway (after a few untimed
 * warm-up joins) and reports that join rate beside the renewal rate. Reports renewals/s, p50/p99, the CPU per
 * renewal of the API, the gateway, PostgreSQL and the agents, and how RenewService grouped the renewals (write
 * transactions and renewals per transaction, leaf queries, gateway-to-API connections opened). The agents'
 * next keys and CSRs are made before the clock starts; the proof over clientTime is made per call. Never
 * asserts a speed. BENCH_CPU_PROFILE=<dir> writes V8 CPU profiles of the API and the gateway.
 *
 * Options: --agents 64 --renewals 3000 --joins 1000
 *          --profile DIR (per phase, joins and renewals: CPU profiles of the API and the gateway and PostgreSQL's
 *          statement statistics, bench/profile-phases.ts; summarise with `npx tsx bench/profile-summary.ts DIR`)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { prepareAttempts } from '../agent/sim/simulate';
import { postToGateway } from '../agent/renew/gateway-client';
import { parseIdentity, type LoadedIdentity } from '../agent/renew/identity';
import { renewIdentity } from '../agent/renew/renew';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../agent/keys';
import { verifyJoinAnswer, type IssuedAnswer } from '../agent/verify-answer';
import { findFreePort, startEmbeddedDatabase } from '../server/db/embedded';
import { ensureDevGatewayCredentials } from '../server/boot/dev-gateway';
import { installPins } from '../server/pki/pins-summary';
import { issueJoinToken } from '../server/tokens/issue';
import { treeCpuSeconds } from './cpu';
import { beginPhase, profiledChild, withStatementStats } from './profile-phases';
import { bootstrapBenchDatabase, exitWhenDone } from './bench-db';
import { drive } from './sessions-drive';

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '64' },
    renewals: { type: 'string', default: '3000' },
    joins: { type: 'string', default: '1000' },
    profile: { type: 'string' },
  },
});
const agents = Number(values.agents);
const renewals = Number(values.renewals);
const joins = Math.max(Number(values.joins), agents);
const log = (line: string) => process.stderr.write(line + '\n');
const BASE = '/api/compute';

function startChild(script: string, env: Record<string, string>, ready: string, role: string): Promise<ChildProcess> {
  // BENCH_CPU_PROFILE=<dir> writes a V8 CPU profile of the API's and the gateway's whole lives there (at exit);
  // --profile DIR one per measured phase (bench/profile-phases.ts).
  const profile = process.env.BENCH_CPU_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE}`] : [];
  const profiled = profiledChild(values.profile, role);
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', ...profiled.execArgv, script], {
    env: { ...process.env, ...env, ...profiled.env },
    stdio: profiled.ipc ? ['pipe', 'pipe', 'inherit', 'ipc'] : ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited (${code})`)));
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes(ready) && resolve(child));
  });
}

interface GroupStats {
  leafQueries: { runs: number; calls: number };
  writeTransactions: { runs: number; calls: number };
  connections: number;
}

/** Asks the API (bench/renew-api.ts) how RenewService grouped its reads and writes so far. */
function apiStats(api: ChildProcess): Promise<GroupStats> {
  return new Promise((resolve) => {
    const onData = (chunk: Buffer) => {
      const line = chunk
        .toString()
        .split('\n')
        .find((l) => l.startsWith('stats '));
      if (!line) return;
      api.stdout!.off('data', onData);
      resolve(JSON.parse(line.slice('stats '.length)) as GroupStats);
    };
    api.stdout!.on('data', onData);
    api.stdin!.write('stats\n');
  });
}

async function main() {
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-bench-renew-'));
  let database = await startEmbeddedDatabase(dir);
  // --profile: PostgreSQL's statement statistics too (the cluster restarted with pg_stat_statements).
  if (values.profile) database = await withStatementStats(dir, database);
  const children: ChildProcess[] = [];
  try {
    const { db, secret, pool, bundle, trust } = await bootstrapBenchDatabase(database.url);
    const gatewayDir = await ensureDevGatewayCredentials(db, secret, dir);
    const [apiPort, gatewayPort] = [await findFreePort(), await findFreePort()];
    const api = await startChild(
      'bench/renew-api.ts',
      {
        DATABASE_URL: database.url,
        BETTER_COMPUTE_SECRET: secret,
        PORT: String(apiPort),
        NODE_ENV: 'production',
        // Each agent renews its one node far more often than an hour's limit allows: the bench measures throughput.
        BETTER_COMPUTE_RENEWALS_PER_NODE_PER_HOUR: '100000',
      },
      'api is running',
      'api',
    );
    children.push(api);
    const gateway = await startChild(
      'server/gateway/main.ts',
      {
        BETTER_COMPUTE_GATEWAY_DIR: gatewayDir,
        BETTER_COMPUTE_GATEWAY_PORT: String(gatewayPort),
        BETTER_COMPUTE_GATEWAY_API_URL: `http://127.0.0.1:${apiPort}`,
        NODE_ENV: 'production',
      },
      'Gateway listening',
      'gateway',
    );
    children.push(gateway);
    // The gateway logs a line per call; the benchmark reads and drops them.
    gateway.stdout!.resume();
    const target = { gatewayUrl: `https://127.0.0.1:${gatewayPort}`, servingCaPin: installPins(bundle).servingCaPin, basePath: BASE };
    const postmaster = Number(readFileSync(path.join(dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);

    const token = (
      await issueJoinToken(db, {
        tenantId: pool.ownerTenantId,
        poolId: pool.id,
        siteId: pool.siteId,
        role: 'node',
        ttlSeconds: 3600,
        maxUses: 10_000,
        createdBy: 'bench',
      })
    ).token!;
    // A few joins before the clock starts warm the API's join thread and JIT, so the timed joins measure the
    // steady rate rather than a cold start.
    const warm = Math.min(agents, 16);
    log(`Preparing ${joins + warm} joins…`);
    const attempts = await prepareAttempts(token, joins + warm, trust);
    const identities: LoadedIdentity[] = [];
    let joinIndex = 0;
    const cpu = () => ({
      api: treeCpuSeconds(api.pid!),
      gateway: treeCpuSeconds(gateway.pid!),
      pg: treeCpuSeconds(postmaster),
      agents: process.cpuUsage(),
    });
    const cpuPer = (before: ReturnType<typeof cpu>, n: number) => {
      const a = process.cpuUsage(before.agents);
      const ms = (s: number) => Math.round((s / n) * 1e6) / 1e3;
      return {
        api: ms(treeCpuSeconds(api.pid!) - before.api),
        gateway: ms(treeCpuSeconds(gateway.pid!) - before.gateway),
        postgres: ms(treeCpuSeconds(postmaster) - before.pg),
        agents: ms((a.user + a.system) / 1e6),
      };
    };

    const joinOne = async () => {
      const attempt = attempts[joinIndex++]!;
      const reply = await postToGateway(target, undefined, `${BASE}/v1/join`, attempt.body);
      if (reply.status !== 200) throw new Error(`join answered ${reply.status}`);
      const answer = verifyJoinAnswer(JSON.parse(reply.body.toString()), {
        signingKeyPin: trust.signingKeyPin,
        signingCertificateDer: trust.signingCertificateDer,
        csrSha256: attempt.keys.csrSha256,
        publicKeySpkiDer: attempt.keys.spkiDer,
        expectedRole: 'node',
      }) as IssuedAnswer;
      if (identities.length < agents) identities.push(parseIdentity(attempt.keys.privateKeyPem, answer));
    };
    const warmResult = await drive(warm, warm, joinOne, log);
    log(`warm-up joins: ${JSON.stringify(warmResult)}`);
    log(`Joining ${joins} agents through the gateway (${agents} at a time, a TLS connection each)…`);
    const targets = [
      { role: 'api', child: api },
      { role: 'gateway', child: gateway },
    ];
    const pgTarget = { url: database.url, postmaster };
    const joinPhase = await beginPhase(values.profile, 'join', targets, pgTarget);
    let before = cpu();
    const joinResult = await drive(joins, agents, joinOne, log);
    const joinCpu = cpuPer(before, joinResult.ok);
    await joinPhase.end(joinResult.ok);
    log(`joins: ${JSON.stringify({ ...joinResult, cpuMsPerJoin: joinCpu })}`);

    await db.$executeRawUnsafe('VACUUM ANALYZE');
    await db.$executeRawUnsafe('CHECKPOINT');
    // The agents' new keys and CSRs are made before the clock starts (an agent can make its next key at any
    // time); the proof over clientTime, the TLS handshake and the answer's checks are timed.
    log(`Making ${renewals} keys and CSRs…`);
    const nextKeys: NodeKeyAndCsr[] = Array.from({ length: renewals }, () => generateNodeKeyAndCsr());
    log(`Renewing ${renewals} times with ${identities.length} agents (each renewal its own TLS connection and client certificate)…`);
    const statsBefore = await apiStats(api);
    const renewPhase = await beginPhase(values.profile, 'renew-tls', targets, pgTarget);
    before = cpu();
    const renewStarted = performance.now();
    let keyIndex = 0;
    const renewResult = await drive(
      renewals,
      identities.length,
      async (_, worker) => {
        identities[worker] = await renewIdentity(identities[worker]!, target, Date.now, nextKeys[keyIndex++]);
      },
      log,
    );
    const renewCpu = cpuPer(before, renewResult.ok);
    const renewSeconds = (performance.now() - renewStarted) / 1000;
    await renewPhase.end(renewResult.ok);
    const statsAfter = await apiStats(api);
    const writes = {
      runs: statsAfter.writeTransactions.runs - statsBefore.writeTransactions.runs,
      calls: statsAfter.writeTransactions.calls - statsBefore.writeTransactions.calls,
    };
    const reads = {
      runs: statsAfter.leafQueries.runs - statsBefore.leafQueries.runs,
      calls: statsAfter.leafQueries.calls - statsBefore.leafQueries.calls,
    };

    process.stdout.write(`\nRenewal benchmark: ${identities.length} concurrent agents, durable commits, a TLS connection per call\n`);
    process.stdout.write(
      `joins through the gateway   ${String(joinResult.perSecond).padStart(6)} joins/s     p50 ${joinResult.p50} ms  p99 ${joinResult.p99} ms  ok ${joinResult.ok}, failed ${joinResult.failed} (after ${warmResult.ok} warm-up joins, p99 ${warmResult.p99} ms)\n`,
    );
    process.stdout.write(
      `   CPU per join: api ${joinCpu.api} ms, gateway ${joinCpu.gateway} ms, PostgreSQL ${joinCpu.postgres} ms, agents ${joinCpu.agents} ms\n`,
    );
    process.stdout.write(
      `renewals through the gateway ${String(renewResult.perSecond).padStart(6)} renewals/s  p50 ${renewResult.p50} ms  p99 ${renewResult.p99} ms  ok ${renewResult.ok}, failed ${renewResult.failed}\n`,
    );
    process.stdout.write(
      `   CPU per renewal: api ${renewCpu.api} ms, gateway ${renewCpu.gateway} ms, PostgreSQL ${renewCpu.postgres} ms, agents ${renewCpu.agents} ms, total ${Math.round((renewCpu.api + renewCpu.gateway + renewCpu.postgres + renewCpu.agents) * 1000) / 1000} ms\n`,
    );
    const per = (a: number, b: number) => (b ? Math.round((a / b) * 10) / 10 : 0);
    process.stdout.write(
      `   write transactions: ${writes.runs} (${per(writes.runs, renewSeconds)}/s), ${per(writes.calls, writes.runs)} renewals per transaction; leaf queries: ${reads.runs}, ${per(reads.calls, reads.runs)} renewals per query; gateway-to-API connections opened: ${statsAfter.connections - statsBefore.connections}\n`,
    );
    await db.$disconnect();
  } finally {
    for (const child of children) {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
      }
    }
    await database.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

exitWhenDone(main(), 'bench failed');

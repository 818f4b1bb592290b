/**
 * `npm run bench:join`: JoinService against a production build on the embedded database (fsync on, every
 * commit durable). Phases: N concurrent agents joining with one shared token of maxUses 10,000, then with
 * one single-use token each; and, measured in the same run, the rate of a join's cryptography alone
 * (CSR, seal, certificate, signed answer on one core), so the cost of everything else is visible.
 *
 * Then the refusal timing: medians of an unknown token id against a known id with a wrong secret (see
 * refusal-timing.ts), side by side with their ratio.
 *
 * A third phase sends `--discovery` PXE machines' first joins through the discovery attestor, each with its
 * own single-use discovery token: every answer is a signed `pending` (a join request recorded). Renewals are
 * measured by `npm run bench:renew`.
 *
 * Options: --agents 64 --joins 3000 --port 0 (any free port) --refusals 200 (refusals of each kind) --discovery 1000.
 *
 * A/B in one sitting (the machines here are shared and noisy): `--compare <entry>` starts a second server
 * (another build, e.g. a copy of .build/server kept as .build/server-base/main.mjs; the same build when only
 * `--compare-env` is given) and `--compare-env KEY=VALUE,...` sets its environment; the shared-token phase then
 * runs `--rounds` times on each server, alternating, and the medians are printed side by side.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { prepareAttempts, runJoins, summarize } from '../agent/sim/simulate';
import { prepareJoinAttempt, type JoinAttempt } from '../agent/join';
import { newPxeMachine } from '../agent/sim/pxe';
import { findFreePort, startEmbeddedDatabase } from '../server/db/embedded';
import { measureJoinCrypto } from './join-crypto-rate';
import { formatRefusalTiming, measureRefusalTiming } from './refusal-timing';
import { keepAliveFetch } from '../agent/sim/http-post';
import { treeCpuSeconds } from './cpu';
import { readFileSync } from 'node:fs';
import { issueJoinToken } from '../server/tokens/issue';
import { PipelineStatsReader, formatPipelineProfile, pipelineProfile } from './join-pipeline-stats';
import { compareServers, type BenchServer } from './join-compare';
import { bootstrapBenchDatabase, exitWhenDone } from './bench-db';

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '64' },
    joins: { type: 'string', default: '3000' },
    port: { type: 'string', default: '0' },
    refusals: { type: 'string', default: '200' },
    compare: { type: 'string' },
    'compare-env': { type: 'string', default: '' },
    rounds: { type: 'string', default: '4' },
    discovery: { type: 'string', default: '1000' },
  },
});
const comparing = values.compare !== undefined || values['compare-env'] !== '';
const agents = Number(values.agents);
const joins = Number(values.joins);
let lastProgress = Date.now();
const STALL_MS = 120_000;
const log = (line: string) => {
  lastProgress = Date.now();
  process.stderr.write(line + '\n');
};
const WARMUP = 2000;

async function main() {
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-bench-'));
  const database = await startEmbeddedDatabase(dir);
  const servers: ChildProcess[] = [];
  let stopping = false;
  // Every step logs; a step that makes no progress for this long stops the run (server and database too)
  // with an error instead of leaving it hanging.
  const stall = setInterval(() => {
    if (Date.now() - lastProgress < STALL_MS) return;
    clearInterval(stall);
    log(`bench failed: no progress for ${STALL_MS / 1000} s; stopping the server and the database`);
    stopping = true;
    for (const server of servers) server.kill('SIGKILL');
    void database.stop().finally(() => process.exit(1));
  }, 1000);
  stall.unref();
  try {
    const { db, secret, pool, crypto, trust } = await bootstrapBenchDatabase(database.url);
    const profile = process.env.BENCH_CPU_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE}`] : [];
    // The compiled server `npm start` runs (npm run bench:join builds it); BENCH_SERVER=tsx runs the TypeScript
    // through tsx instead, to compare the two in one sitting.
    const defaultEntry = process.env.BENCH_SERVER === 'tsx' ? ['--import', 'tsx', 'server/boot/main.ts'] : ['.build/server/main.mjs'];
    const startServer = async (entry: string[], port: number, extraEnv: Record<string, string>): Promise<BenchServer> => {
      const proc = spawn(process.execPath, [...profile, ...entry], {
        env: {
          ...process.env,
          ...extraEnv,
          DATABASE_URL: database.url,
          BETTER_COMPUTE_SECRET: secret,
          PORT: String(port),
          NODE_ENV: 'production',
          BETTER_COMPUTE_JOIN_STATS: '1',
          // Every simulated PXE machine joins from this one address, far past the per-address limit on new requests.
          BETTER_COMPUTE_JOIN_REQUESTS_PER_ADDRESS: '1000000',
          BETTER_COMPUTE_JOIN_REQUESTS_PER_SITE: '1000000',
          BETTER_COMPUTE_GATEWAY_PORT: '0',
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      servers.push(proc);
      // A build that predates the counters (SIGUSR2 would stop it) runs with BENCH_NO_STATS=1: no profile.
      const stats = process.env.BENCH_NO_STATS === '1' ? null : new PipelineStatsReader(proc);
      await new Promise<void>((resolve, reject) => {
        proc.on('exit', (code) => reject(new Error(`the server exited (${code})`)));
        proc.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('is running') && resolve());
      });
      proc.on('exit', (code, signal) => {
        if (!stopping) {
          log(`the server exited during the benchmark (${code ?? signal})`);
          process.exit(1);
        }
      });
      return { proc, url: `http://127.0.0.1:${port}`, stats };
    };
    const primary = await startServer(defaultEntry, Number(values.port) || (await findFreePort()), {});
    const other = comparing
      ? await startServer(
          values.compare ? [values.compare] : defaultEntry,
          await findFreePort(),
          Object.fromEntries(
            values['compare-env']
              .split(',')
              .filter(Boolean)
              .map((kv) => kv.split('=') as [string, string]),
          ),
        )
      : null;
    const serverUrl = primary.url;
    const mint = async (maxUses: number) =>
      (
        await issueJoinToken(db, {
          tenantId: pool.ownerTenantId,
          poolId: pool.id,
          siteId: pool.siteId,
          role: 'node',
          ttlSeconds: 3600,
          maxUses,
          createdBy: 'bench',
        })
      ).token!;

    log(`Preparing ${joins} agents' keys, CSRs and sealed tokens per phase (client-side work, outside the timed runs)…`);

    const postmaster = Number(readFileSync(path.join(dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    /** Runs a phase and says where the CPU went: ms of CPU per join in the server, PostgreSQL and the agents. */
    const phase = async (attempts: Awaited<ReturnType<typeof prepareAttempts>>, target: BenchServer = primary) => {
      const { proc: server, stats } = target;
      // Start each phase from a quiet database: flush what minting and earlier phases left for the
      // checkpointer and autovacuum, which would otherwise run on the other core during the measurement.
      await db.$executeRawUnsafe('VACUUM ANALYZE');
      await db.$executeRawUnsafe('CHECKPOINT');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const pipelineBefore = await stats?.read();
      const before = { server: treeCpuSeconds(server!.pid!), pg: treeCpuSeconds(postmaster), agents: process.cpuUsage() };
      const run = await runJoins({ serverUrl: target.url, trust, attempts, concurrency: agents });
      const result = { ...summarize(run), ...(run.refused + run.failed ? { reasons: run.reasons } : {}) };
      const agentsCpu = process.cpuUsage(before.agents);
      const cpu = { server: treeCpuSeconds(server!.pid!) - before.server, pg: treeCpuSeconds(postmaster) - before.pg };
      const pipelineAfter = await stats?.read();
      const pipeline = pipelineBefore && pipelineAfter ? pipelineProfile(pipelineBefore, pipelineAfter, result.seconds) : null;
      const perJoin = (seconds: number) => Math.round((seconds / attempts.length) * 1e6) / 1e3;
      return {
        ...result,
        cpuMsPerJoin: {
          server: perJoin(cpu.server),
          postgres: perJoin(cpu.pg),
          serverAndPostgres: perJoin(cpu.server + cpu.pg),
          agents: perJoin((agentsCpu.user + agentsCpu.system) / 1e6),
        },
        pipeline,
      };
    };

    /** First joins of PXE machines, each with a single-use discovery token bound to its MAC. */
    const prepareDiscoveryAttempts = async (count: number) => {
      const attempts: JoinAttempt[] = [];
      for (let i = 0; i < count; i++) {
        const machine = newPxeMachine(joins + i);
        const token = (
          await issueJoinToken(db, {
            tenantId: pool.ownerTenantId,
            poolId: null,
            siteId: pool.siteId,
            role: 'discovery',
            ttlSeconds: 3600,
            maxUses: 1,
            boundMac: machine.mac,
            createdBy: 'module:boot',
          })
        ).token!;
        attempts.push(
          await prepareJoinAttempt({ token, trust, claims: machine.claims, role: 'discovery', attestor: 'discovery', keys: machine.keys }),
        );
      }
      return attempts;
    };

    // Both phases' attempts are prepared first, so neither runs while the other's preparation warms up.
    const sharedToken = await mint(10_000);
    const sharedAttempts = await prepareAttempts(sharedToken, joins, trust);
    log(`  shared-token phase: ${joins} attempts ready; minting ${joins} single-use tokens…`);
    // A few at a time, rather than thousands of calls queued at once on the client's 4 connections.
    const singleTokens = new Array<string>(joins);
    let minted = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (minted < joins) {
          const index = minted++;
          singleTokens[index] = await mint(1);
        }
      }),
    );
    const singleAttempts = await prepareAttempts(singleTokens, joins, trust);
    const discoveryAttempts = await prepareDiscoveryAttempts(Number(values.discovery));
    log(`  single-use phase: ${joins} attempts ready, discovery phase: ${discoveryAttempts.length}; warming up with ${WARMUP} joins…`);

    // Warm both processes up (JIT, connection pools, PostgreSQL's caches) on the same path first; the first
    // thousand joins after a start run measurably slower and would be charged to whichever phase ran first.
    for (const target of other ? [primary, other] : [primary]) {
      await runJoins({
        serverUrl: target.url,
        trust,
        attempts: await prepareAttempts(await mint(WARMUP), WARMUP, trust),
        concurrency: agents,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if (other) {
      await compareServers(
        {
          rounds: Number(values.rounds),
          agents,
          joins,
          labels: ['this build', `${values.compare ?? 'this build'} ${values['compare-env']}`],
          log,
        },
        async (side) => {
          log(`preparing ${joins} attempts for the next round…`);
          return phase(await prepareAttempts(await mint(joins), joins, trust), side === 0 ? primary : other);
        },
      );
      await db.$disconnect();
      return;
    }

    log('Measuring the shared token…');
    const sharedResult = await phase(sharedAttempts);
    log(`shared token: ${JSON.stringify(sharedResult)}`);
    log('Measuring single-use tokens…');
    const singleResult = await phase(singleAttempts);
    log(`single-use tokens: ${JSON.stringify(singleResult)}`);
    log('Measuring discovery pending answers…');
    const discoveryResult = discoveryAttempts.length ? await phase(discoveryAttempts) : null;
    log(`discovery pending answers: ${JSON.stringify(discoveryResult)}`);

    // After the shared-token phase, the server has admitted that token many times (and holds its early-signing
    // hint): the case where a wrong secret used to cost more than an unknown id.
    log(`Measuring refusals: ${values.refusals} unknown token ids and ${values.refusals} wrong secrets of the shared token, interleaved…`);
    const single = keepAliveFetch(1);
    const refusalTiming = await measureRefusalTiming({
      knownToken: sharedToken,
      trust,
      samples: Number(values.refusals),
      send: async (body) => (await single.fetch(`${serverUrl}/api/compute/v1/join`, { method: 'POST', body })).status,
    });
    single.close();

    const cryptoRate = measureJoinCrypto(crypto, await prepareAttempts(await mint(1), 1000, trust));
    const rows = [
      ['shared token (maxUses 10,000)', sharedResult],
      ['single-use tokens', singleResult],
      ...(discoveryResult ? ([['discovery pending answers', discoveryResult]] as const) : []),
    ] as const;
    process.stdout.write(`\nJoin benchmark: ${agents} concurrent agents, ${joins} joins per phase, durable commits\n`);
    for (const [label, r] of rows) {
      process.stdout.write(
        `${label.padEnd(32)} ${String(r.joinsPerSecond).padStart(8)} joins/s   p50 ${r.p50Ms} ms   p99 ${r.p99Ms} ms   admitted ${r.admitted}, refused ${r.refused}, failed ${r.failed}\n`,
      );
      process.stdout.write(
        `${''.padEnd(32)} CPU per join: server ${r.cpuMsPerJoin.server} ms + PostgreSQL ${r.cpuMsPerJoin.postgres} ms = ${r.cpuMsPerJoin.serverAndPostgres} ms (agents ${r.cpuMsPerJoin.agents} ms)\n`,
      );
      if (r.pipeline) process.stdout.write(`${''.padEnd(32)} ${formatPipelineProfile(r.pipeline)}\n`);
    }
    process.stdout.write(`${'join cryptography alone (1 core)'.padEnd(32)} ${String(cryptoRate).padStart(8)} joins/s\n`);
    process.stdout.write(`${formatRefusalTiming(refusalTiming)}\n`);
    process.stdout.write(
      `shared-token throughput is ${Math.round((sharedResult.joinsPerSecond / cryptoRate) * 100)}% of the cryptography-only rate\n`,
    );
    process.stdout.write(
      'not in this run: renewals (npm run bench:renew); the join-request queue at scale (npm run bench:join-requests)\n',
    );
    await db.$disconnect();
  } finally {
    clearInterval(stall);
    stopping = true;
    for (const server of servers) {
      if (server.exitCode !== null) continue;
      server.kill('SIGTERM');
      await new Promise((r) => server.once('exit', r));
    }
    await database.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

exitWhenDone(main(), 'bench failed');

/**
 * `npm run bench:sessions`: one gateway process holding `--sessions` concurrent sessions with heartbeats,
 * each kept by the agent's own session loop (agent/session/loop.ts: jittered reconnects), identities in
 * memory, against the API's fast paths on the embedded database (durable commits). Reports, beside the join
 * rate of the same run:
 *   - the gateway's RSS and its CPU at idle (heartbeats and lease renewals only) over `--idle-seconds`;
 *   - after a gateway restart, how long until every session is back, while a console list (REST nodes.list,
 *     100 rows) is timed every 200 ms (p50/p99);
 *   - `--renewals` renewals on existing session connections (no TLS handshake), `--agents` at a time, with the
 *     server CPU (gateway + API + PostgreSQL) per renewal beside the server CPU per join;
 *   - a trust rotation (`--rotate <key>`, a `prepare` step; `none` skips it): how long until every open session
 *     heard the new trust set in a `trust` event, and the server CPU per event beside a renewal's; for `node-ca`,
 *     then the activation (timed the same way) and the `--renewals` renewals again on the same session
 *     connections, now issued by the new node CA (each checked to chain to it), with the server CPU per renewal
 *     beside the one before the rotation (goal: no more).
 * Each measured phase (the renewal rounds, each trust event case) ends by merging the GIN indexes' pending
 * lists (bench/sessions-drive.ts settleGinIndexes) inside its CPU window: the index entries a phase's writes left
 * pending are charged to it, not to whichever later writer happens to fill the list (a rotation step records the
 * trust version of every node, a write a renewal round would otherwise pay for).
 * Never asserts a speed: the goals (RSS <= 1 GiB, idle CPU <= 10% of a core, back within 2 min, list p99 <=
 * 500 ms, a renewal at most twice a join) are printed beside the figures.
 *
 * The sessions are kept by `--clients` client processes (bench/sessions-client.ts), each holding its share on
 * its own event loop and descriptor table; the joins and the console lists run here. Every process raises
 * its soft descriptor limit to the hard one (Node does at start): the gateway needs one descriptor per session
 * and a few hundred more, so `ulimit -Hn` must exceed `--sessions` by about 300 (checked before the run).
 *
 * Options: --sessions 10000 --clients 4 --agents 64 --renewals 2000 --heartbeat 30 --idle-seconds 30
 *          --start-jitter 5 (seconds: the agents' first-session jitter; 0 opens every session at once)
 *          --client-opens 16 (sessions each client process opens at once: TLS handshake and Hello)
 *          --rotate command-signing (the key whose rotation is prepared; node-ca also activates it and renews
 *          onto it; none: no rotation case)
 *          --command bcd.doctor (a command sent to every node as one batch, timed until all answered, with the
 *          server CPU per command beside a renewal's; none: no command case)
 *          --profile DIR (per phase, the joins, each renewal round and the restart storm: CPU profiles of the API
 *          and the gateway and PostgreSQL's statement statistics, bench/profile-phases.ts; summarise them with
 *          `npx tsx bench/profile-summary.ts DIR`)
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { prepareAttempts } from '../agent/sim/simulate';
import { percentile } from '../agent/sim/percentiles';
import { postToGateway } from '../agent/renew/gateway-client';
import { verifyJoinAnswer, type IssuedAnswer } from '../agent/verify-answer';
import { insertApiKey } from '../server/api-keys/api-keys';
import { findFreePort, startEmbeddedDatabase } from '../server/db/embedded';
import { ensureDevGatewayCredentials } from '../server/boot/dev-gateway';
import { installPins } from '../server/pki/pins-summary';
import { loadPki } from '../server/pki/bundle/store';
import { issueJoinToken } from '../server/tokens/issue';
import { principalOf } from '../server/authz/principal';
import { treeCpuSeconds } from './cpu';
import { beginPhase, profiledChild, withStatementStats } from './profile-phases';
import { drive, log, settleGinIndexes, waitFor } from './sessions-drive';
import { rotateKind, trustEventCase, trustEventLine, type RotationRun } from './sessions-rotation';
import { commandCase, commandKindOf, commandLine } from './sessions-commands';
import { bootstrapBenchDatabase } from './bench-db';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '10000' },
    agents: { type: 'string', default: '64' },
    renewals: { type: 'string', default: '2000' },
    heartbeat: { type: 'string', default: '30' },
    'idle-seconds': { type: 'string', default: '30' },
    clients: { type: 'string', default: '4' },
    'start-jitter': { type: 'string', default: '5' },
    'client-opens': { type: 'string', default: '16' },
    rotate: { type: 'string', default: 'command-signing' },
    command: { type: 'string', default: 'bcd.doctor' },
    profile: { type: 'string' },
  },
});
const clientCount = Math.max(1, Number(values.clients));
const sessions = Number(values.sessions);
const agents = Number(values.agents);
const renewals = Math.min(Number(values.renewals), sessions);
const idleSeconds = Number(values['idle-seconds']);
const BASE = '/api/compute';

function startChild(script: string, env: Record<string, string>, ready: string, role: string): Promise<ChildProcess> {
  const profiled = profiledChild(values.profile, role);
  const child = spawn(process.execPath, ['--import', 'tsx', ...profiled.execArgv, script], {
    env: { ...process.env, ...env, ...profiled.env },
    stdio: profiled.ipc ? ['pipe', 'pipe', 'inherit', 'ipc'] : ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited (${code})`)));
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes(ready) && resolve(child));
  });
}

/** This process's hard limit of open files (what Node raises every process's soft limit to). */
const hardOpenFiles = () => {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  const hard = line?.split(/\s+/)[4];
  return hard === undefined || hard === 'unlimited' ? Infinity : Number(hard);
};

/** A forked client process (bench/sessions-client.ts) and its calls. */
interface Client {
  child: ChildProcess;
  /** Sends a message and resolves with the first answer of type `answer` (renewals: of that id). */
  call(message: object, answer: string, id?: number): Promise<{ error?: string }>;
}

function startClient(): Promise<Client> {
  const child = fork('bench/sessions-client.ts', [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  child.on('error', () => {});
  const waiting = new Map<string, Array<(m: { error?: string }) => void>>();
  child.on('message', (m: { type: string; id?: number; error?: string }) => {
    const key = m.id === undefined ? m.type : `${m.type}:${m.id}`;
    waiting.get(key)?.shift()?.(m);
  });
  const client: Client = {
    child,
    call: (message, answer, id) =>
      new Promise((resolve) => {
        const key = id === undefined ? answer : `${answer}:${id}`;
        waiting.set(key, [...(waiting.get(key) ?? []), resolve]);
        child.send(message);
      }),
  };
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`a client process exited (${code})`)));
    waiting.set('started', [() => resolve(client)]);
  });
}

/** Milliseconds of CPU per operation of each server process. */
const cpuParts = (ms: { gateway: number; api: number; pg: number }) =>
  `gateway ${ms.gateway.toFixed(2)}, API ${ms.api.toFixed(2)}, PostgreSQL ${ms.pg.toFixed(2)}`;

const rssMiB = (pid: number) => {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'))!;
  return Math.round(Number(line.split(/\s+/)[1]) / 1024);
};

async function main() {
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-bench-sessions-'));
  let database = await startEmbeddedDatabase(dir);
  // --profile: PostgreSQL's statement statistics too (the cluster restarted with pg_stat_statements).
  if (values.profile) database = await withStatementStats(dir, database);
  const children: ChildProcess[] = [];
  let gateway: ChildProcess | null = null;
  const clients: Client[] = [];
  let cleaning: Promise<void> | undefined;
  // Interrupted (Ctrl-C, or a kill of this process): the children and the database go too.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      log(`${signal}: stopping`);
      void cleanup().finally(() => process.exit(130));
    });
  // The gateway holds a descriptor per session, plus its listener, its API connections and PostgreSQL's.
  if (hardOpenFiles() < sessions + 300)
    throw new Error(
      `${sessions} sessions need about ${sessions + 300} open files in the gateway process; the hard limit is ${hardOpenFiles()} (raise it with ulimit -Hn as root, or run fewer sessions)`,
    );
  try {
    const { db, secret, first, pool, bundle, crypto, trust } = await bootstrapBenchDatabase(database.url);
    const gatewayDir = await ensureDevGatewayCredentials(db, secret, dir);
    const [apiPort, gatewayPort] = [await findFreePort(), await findFreePort()];
    const env = {
      DATABASE_URL: database.url,
      BETTER_COMPUTE_SECRET: secret,
      PORT: String(apiPort),
      NODE_ENV: 'production',
      BETTER_COMPUTE_SESSION_HEARTBEAT_SECONDS: values.heartbeat!,
    };
    const api = await startChild('bench/sessions-api.ts', env, 'api is running', 'api');
    children.push(api);
    const gatewayEnv = {
      BETTER_COMPUTE_GATEWAY_DIR: gatewayDir,
      BETTER_COMPUTE_GATEWAY_PORT: String(gatewayPort),
      BETTER_COMPUTE_GATEWAY_API_URL: `http://127.0.0.1:${apiPort}`,
      NODE_ENV: 'production',
      BETTER_COMPUTE_GATEWAY_MAX_CONNECTIONS: String(sessions + 1000),
    };
    const startGateway = async () => {
      const g = await startChild('server/gateway/main.ts', gatewayEnv, 'Gateway listening', 'gateway');
      g.stdout!.resume();
      return g;
    };
    // Every lease of this run started after this (the gateway's first one included).
    const runStarted = new Date(Date.now() - 5_000);
    gateway = await startGateway();
    const target = { gatewayUrl: `https://127.0.0.1:${gatewayPort}`, servingCaPin: installPins(bundle).servingCaPin, basePath: BASE };
    const postmaster = Number(readFileSync(path.join(dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const serverCpuParts = () => ({
      api: treeCpuSeconds(api.pid!),
      gateway: treeCpuSeconds(gateway!.pid!),
      pg: treeCpuSeconds(postmaster),
    });
    const serverCpu = () => {
      const parts = serverCpuParts();
      return parts.api + parts.gateway + parts.pg;
    };
    const apiKey = (await insertApiKey(db, { tenantId: pool.ownerTenantId, role: 'viewer', name: 'bench' }, 'bench')).key;

    // Joins: every machine of the run, through the gateway, `agents` at a time (after untimed warm-up joins).
    // A token allows at most 10,000 uses: the warm-up joins spend one of their own.
    const mint = async (maxUses: number) =>
      (
        await issueJoinToken(db, {
          tenantId: pool.ownerTenantId,
          poolId: pool.id,
          siteId: pool.siteId,
          role: 'node',
          ttlSeconds: 7200,
          maxUses,
          createdBy: 'bench',
        })
      ).token!;
    const warm = 16;
    log(`Preparing ${sessions + warm} joins…`);
    const attempts = [
      ...(await prepareAttempts(await mint(warm), warm, trust)),
      ...(await prepareAttempts(await mint(Math.min(10_000, sessions + 100)), sessions, trust)),
    ];
    const identities: Array<{ keyPem: string; record: IssuedAnswer }> = [];
    const joinOne = async (index: number) => {
      const attempt = attempts[index]!;
      const reply = await postToGateway(target, undefined, `${BASE}/v1/join`, attempt.body);
      if (reply.status !== 200) throw new Error(`join answered ${reply.status}`);
      const answer = verifyJoinAnswer(JSON.parse(reply.body.toString()), {
        signingKeyPin: trust.signingKeyPin,
        signingCertificateDer: trust.signingCertificateDer,
        csrSha256: attempt.keys.csrSha256,
        publicKeySpkiDer: attempt.keys.spkiDer,
        expectedRole: 'node',
      }) as IssuedAnswer;
      if (index >= warm) identities.push({ keyPem: attempt.keys.privateKeyPem, record: answer });
    };
    await drive(warm, warm, joinOne);
    log(`Joining ${sessions} machines through the gateway (${agents} at a time)…`);
    const pgTarget = { url: database.url, postmaster };
    const joinPhase = await beginPhase(
      values.profile,
      'join',
      [
        { role: 'api', child: api },
        { role: 'gateway', child: gateway },
      ],
      pgTarget,
    );
    const before = serverCpu();
    const joinResult = await drive(sessions, agents, (i) => joinOne(i + warm));
    const joinServerMs = ((serverCpu() - before) / joinResult.ok) * 1000;
    await joinPhase.end(joinResult.ok);
    log(`joins: ${JSON.stringify(joinResult)}, server CPU ${joinServerMs.toFixed(2)} ms per join`);

    // Sessions, each kept by the agent's loop in a client process: machine i is client (i % clients)'s
    // machine floor(i / clients).
    log(`Starting ${clientCount} client processes…`);
    for (let c = 0; c < clientCount; c++) clients.push(await startClient());
    for (let c = 0; c < clientCount; c++) {
      const share = identities.filter((_, i) => i % clientCount === c);
      for (let from = 0; from < share.length; from += 500)
        await clients[c]!.call({ type: 'identities', items: share.slice(from, from + 500) }, 'loaded');
    }
    const clientCpu = () => clients.reduce((sum, c) => sum + treeCpuSeconds(c.child.pid!), 0);
    const liveSessions = async (since: Date) =>
      Number(
        (
          await db.$queryRaw<
            Array<{ n: bigint }>
          >`SELECT count(*) AS n FROM node_sessions s JOIN gateway_leases g ON g.gateway_id = s.gateway_id WHERE g.expires_at > now() AND g.started_at >= ${since}`
        )[0]!.n,
      );
    const startJitterMs = Number(values['start-jitter']) * 1000;
    log(`Opening ${identities.length} sessions (first-session jitter ${startJitterMs / 1000} s)…`);
    const openCpu = { server: serverCpu(), clients: clientCpu() };
    // The client processes' loops run commands as agents do: they check each envelope under the command trust
    // bundle of a join answer, and welcomes under the join-signing key.
    const commandTrust = {
      joinSigningKeyPin: crypto.signingKeyPin,
      signingCertificate: crypto.signingCertificate,
      trust: identities[0]!.record.trust,
      commandTrustBundle: identities[0]!.record.commandTrustBundle,
    };
    for (const c of clients)
      c.child.send({ type: 'start', target, startJitterMs, concurrentOpens: Number(values['client-opens']), commandTrust });
    const openSeconds = await waitFor('sessions open', identities.length, () => liveSessions(runStarted));
    const openServerMs = ((serverCpu() - openCpu.server) / identities.length) * 1000;
    log(`all ${identities.length} sessions open after ${openSeconds.toFixed(1)} s`);

    // Idle: heartbeats and lease renewals only.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const gatewayBefore = treeCpuSeconds(gateway.pid!);
    const clientsBefore = clientCpu();
    const idleStarted = performance.now();
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
    const idleElapsed = (performance.now() - idleStarted) / 1000;
    const idleCpuPercent = ((treeCpuSeconds(gateway.pid!) - gatewayBefore) / idleElapsed) * 100;
    const clientIdlePercent = ((clientCpu() - clientsBefore) / idleElapsed) * 100;
    const rss = rssMiB(gateway.pid!);
    log(`gateway idle: RSS ${rss} MiB, CPU ${idleCpuPercent.toFixed(1)}% of a core`);

    // Renewals on the open sessions' connections: one per session (a connection is authenticated by the
    // certificate it was opened with), `agents` at a time, each made by the client process holding it.
    const renewOnSessions = async () => {
      log(`Making ${renewals} keys and CSRs…`);
      await Promise.all(
        clients.map((c, ci) =>
          c.call(
            {
              type: 'prepare',
              indices: Array.from({ length: renewals }, (_, i) => i)
                .filter((i) => i % clientCount === ci)
                .map((i) => Math.floor(i / clientCount)),
            },
            'prepared',
          ),
        ),
      );
      log(`Renewing ${renewals} times on session connections (${agents} at a time)…`);
      // What earlier phases left in the GIN pending lists is theirs (each phase settles its own; the joins and
      // the session opens are settled here, untimed).
      await settleGinIndexes(db);
      const phase = await beginPhase(
        values.profile,
        renewRound++ ? `renew-${renewRound}` : 'renew',
        [
          { role: 'api', child: api },
          { role: 'gateway', child: gateway! },
        ],
        pgTarget,
      );
      const cpuBefore = serverCpuParts();
      // Renewals whose new chain was checked to end at the expected node CA (after `expect` only).
      let chained = 0;
      const result = await drive(renewals, agents, async (i) => {
        const id = renewId++;
        const reply = (await clients[i % clientCount]!.call({ type: 'renew', id, index: Math.floor(i / clientCount) }, 'renewed', id)) as {
          error?: string;
          chained?: boolean;
        };
        if (reply.error) throw new Error(reply.error);
        if (reply.chained === true) chained++;
      });
      // The index entries these renewals left pending are merged inside their CPU window.
      const settledPages = await settleGinIndexes(db);
      const cpuAfter = serverCpuParts();
      await phase.end(result.ok);
      const per = (part: keyof typeof cpuAfter) => ((cpuAfter[part] - cpuBefore[part]) / result.ok) * 1000;
      const parts = { gateway: per('gateway'), api: per('api'), pg: per('pg') };
      const serverMs = parts.gateway + parts.api + parts.pg;
      log(
        `renewals: ${JSON.stringify(result)}, server CPU ${serverMs.toFixed(2)} ms per renewal (GIN pending pages merged at the end: ${settledPages})`,
      );
      return { ...result, serverMs, parts, chained };
    };
    let renewId = 0;
    let renewRound = 0;
    const renewResult = await renewOnSessions();
    const renewServerMs = renewResult.serverMs;

    const commandKind = commandKindOf(values.command);
    const commandResult = commandKind
      ? await commandCase(
          {
            db,
            operator: principalOf('operator', 'bench', [[pool.ownerTenantId, 'admin']]),
            tenantId: pool.ownerTenantId,
            poolId: pool.id,
            sessions: identities.length,
            cpu: serverCpuParts,
            settle: () => settleGinIndexes(db),
          },
          commandKind,
        )
      : null;

    const kind = rotateKind(values.rotate);
    // The renewals onto a new node CA are each node's second renewal (or later), and a node's renewal costs a
    // little more with each certificate row it has: a second round before the rotation is their baseline.
    const baselineRenewals = kind === 'node-ca' ? await renewOnSessions() : null;

    // Trust rotation: one step makes a new trust set; every open session hears it in a `trust` event, carried by
    // the gateway's lease answers (the API follows the change by itself, then announces it on the watch stream).
    const rotationRun: RotationRun = {
      db,
      secret,
      rootAdmin: principalOf('operator', 'bench', [[first.rootTenantId, 'admin']]),
      sessions: identities.length,
      cpu: serverCpuParts,
      settle: () => settleGinIndexes(db),
      heard: async (version) => {
        const counts = await Promise.all(clients.map((c) => c.call({ type: 'trust', version }, 'trusted')));
        return counts.reduce((sum, m) => sum + (m as { count?: number }).count!, 0);
      },
    };
    const rotation = kind ? await trustEventCase(rotationRun, kind, 'prepare') : null;
    // A node CA rotation goes on: activated (a second trust event to every session), then the same renewals on
    // the same session connections, now issued by the new node CA, each checked to chain to it.
    const activation = rotation && kind === 'node-ca' ? await trustEventCase(rotationRun, kind, 'activate') : null;
    let rotatedRenewals: Awaited<ReturnType<typeof renewOnSessions>> | null = null;
    if (activation) {
      const nodeCaPem = (await loadPki(db, secret)).nodeCa.certificatePem;
      const expectation = {
        type: 'expect',
        nodeCaPem,
        joinSigningKeyPin: crypto.signingKeyPin,
        signingCertificate: crypto.signingCertificate,
      };
      await Promise.all(clients.map((c) => c.call(expectation, 'expecting')));
      rotatedRenewals = await renewOnSessions();
      log(`renewed onto the new node CA: ${rotatedRenewals.chained}, not chaining to it: ${rotatedRenewals.ok - rotatedRenewals.chained}`);
    }

    // Gateway restart: every session drops; the loops come back with jittered backoff. A console list is
    // timed meanwhile.
    const list = async () => {
      const answer = await fetch(`http://127.0.0.1:${apiPort}${BASE}/v1/tenants/${pool.ownerTenantId}/nodes?limit=100`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      await answer.arrayBuffer();
      return answer.status;
    };
    // Untimed lists first: the first ones load Prisma's and the REST adapter's code. Then a quiet baseline.
    for (let i = 0; i < 5; i++) await list();
    const quiet: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      if ((await list()) === 200) quiet.push(performance.now() - t0);
    }
    log('Restarting the gateway…');
    const listLatencies: number[] = [];
    let listFailures = 0;
    let listing = true;
    const lister = (async () => {
      while (listing) {
        const t0 = performance.now();
        if ((await list()) === 200) listLatencies.push(performance.now() - t0);
        else listFailures++;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
    const restartedAt = new Date();
    // The profile of the storm: the API's and PostgreSQL's from before the kill, the new gateway's from its start.
    const stormPhase = await beginPhase(values.profile, 'reconnect', [{ role: 'api', child: api }], pgTarget);
    const stormBefore = { api: treeCpuSeconds(api.pid!), pg: treeCpuSeconds(postmaster), clients: clientCpu() };
    const loadBefore = loadavg()[0]!;
    const old = gateway;
    old.kill('SIGTERM');
    await new Promise((resolve) => old.once('exit', resolve));
    gateway = await startGateway();
    await stormPhase.add('gateway', gateway);
    const backSeconds = await waitFor('sessions back', identities.length, () => liveSessions(restartedAt));
    // The old gateway's CPU is gone with it: this counts the API, PostgreSQL and the new gateway.
    const storm = {
      api: treeCpuSeconds(api.pid!) - stormBefore.api,
      pg: treeCpuSeconds(postmaster) - stormBefore.pg,
      gateway: treeCpuSeconds(gateway.pid!),
      clients: clientCpu() - stormBefore.clients,
    };
    await stormPhase.end(identities.length);
    const helloServerMs = ((storm.api + storm.pg + storm.gateway) / identities.length) * 1000;
    const perReconnect = (seconds: number) => ((seconds / identities.length) * 1000).toFixed(2);
    log(
      `storm CPU per reconnect: gateway ${perReconnect(storm.gateway)} ms, API ${perReconnect(storm.api)} ms, PostgreSQL ${perReconnect(storm.pg)} ms, clients ${perReconnect(storm.clients)} ms; load average ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after`,
    );
    listing = false;
    await lister;
    const rssAfter = rssMiB(gateway.pid!);
    log(`all back ${backSeconds.toFixed(1)} s after the restart`);

    const p = (q: number) => Math.round(percentile(listLatencies, q));
    const pq = (q: number) => Math.round(percentile(quiet, q));
    process.stdout.write(
      `\nSessions benchmark: ${identities.length} sessions through one gateway process, heartbeat every ${values.heartbeat} s, durable commits\n`,
    );
    process.stdout.write(
      `joins through the gateway     ${joinResult.perSecond} joins/s, p50 ${joinResult.p50} ms, p99 ${joinResult.p99} ms (ok ${joinResult.ok}, failed ${joinResult.failed}); server CPU ${joinServerMs.toFixed(2)} ms per join\n`,
    );
    process.stdout.write(
      `sessions opened               all ${identities.length} in ${openSeconds.toFixed(1)} s (first-session jitter ${startJitterMs / 1000} s, ${clientCount} client processes); server CPU about ${openServerMs.toFixed(2)} ms per session opened\n`,
    );
    process.stdout.write(
      `gateway at idle               RSS ${rss} MiB (goal <= 1024), CPU ${idleCpuPercent.toFixed(1)}% of one core over ${idleSeconds} s (goal <= 10%); the client processes ${clientIdlePercent.toFixed(1)}% of a core\n`,
    );
    process.stdout.write(
      `renewals on session conns     ${renewResult.perSecond} renewals/s, p50 ${renewResult.p50} ms, p99 ${renewResult.p99} ms (ok ${renewResult.ok}, failed ${renewResult.failed}); server CPU ${renewServerMs.toFixed(2)} ms per renewal (${cpuParts(renewResult.parts)}) = ${(renewServerMs / joinServerMs).toFixed(2)}x a join (goal <= 2x)\n`,
    );
    if (commandResult) process.stdout.write(commandLine(commandResult, renewServerMs, joinServerMs));
    if (rotation) process.stdout.write(trustEventLine(rotation, identities.length, renewServerMs, joinServerMs));
    if (activation) process.stdout.write(trustEventLine(activation, identities.length, renewServerMs, joinServerMs));
    if (rotatedRenewals)
      process.stdout.write(
        `renewals onto the new node CA ${rotatedRenewals.perSecond} renewals/s, p50 ${rotatedRenewals.p50} ms, p99 ${rotatedRenewals.p99} ms (ok ${rotatedRenewals.ok}, failed ${rotatedRenewals.failed}, not chaining to the new node CA ${rotatedRenewals.ok - rotatedRenewals.chained}); server CPU ${rotatedRenewals.serverMs.toFixed(2)} ms per renewal (${cpuParts(rotatedRenewals.parts)}) = ${(rotatedRenewals.serverMs / renewServerMs).toFixed(2)}x a node's first renewal before the rotation, ${(rotatedRenewals.serverMs / baselineRenewals!.serverMs).toFixed(2)}x its second (${baselineRenewals!.serverMs.toFixed(2)} ms; goal <= 1x)\n`,
      );
    if (!rotation) process.stdout.write(`trust rotation                not measured (--rotate none, or this build cannot rotate)\n`);
    process.stdout.write(
      `gateway restart               all ${identities.length} back in ${backSeconds.toFixed(1)} s (goal <= 120 s); console list p50 ${p(50)} ms, p99 ${p(99)} ms over ${listLatencies.length} lists, ${listFailures} failed (goal p99 <= 500 ms; quiet: p50 ${pq(50)} ms, p99 ${pq(99)} ms); server CPU about ${helloServerMs.toFixed(2)} ms per reconnect (TLS handshake and Hello: gateway ${perReconnect(storm.gateway)}, API ${perReconnect(storm.api)}, PostgreSQL ${perReconnect(storm.pg)}; the clients ${perReconnect(storm.clients)}); gateway RSS after ${rssAfter} MiB\n`,
    );
    process.stdout.write(
      `load average (1, 5, 15 min)  ${loadavg()
        .map((n) => n.toFixed(1))
        .join(', ')}\n`,
    );
    await db.$disconnect();
  } finally {
    await cleanup();
  }

  /** Stops the children and the database once, whoever asks first (the end of the run or a signal). */
  function cleanup(): Promise<void> {
    return (cleaning ??= stopEverything());
  }
  async function stopEverything() {
    for (const c of clients) if (c.child.exitCode === null && c.child.connected) c.child.send({ type: 'stop' }, () => {});
    for (const child of [...clients.map((c) => c.child), ...children, ...(gateway ? [gateway] : [])]) {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
    }
    await database.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: Error) => {
    process.stderr.write(`bench:sessions failed: ${error.stack ?? error.message}\n`);
    process.exit(1);
  },
);

/**
 * `npm run bench:webhooks`: webhook delivery in process against a fresh embedded database (fsync on).
 *
 * 1. Latency: `--rate` events per second (default 100) for `--seconds` (default 30), each inserted in its own
 *    statement into one tenant with one subscription, delivered by one WebhookWorker (the production worker,
 *    default settings but private targets allowed) to a receiver on 127.0.0.1 that checks every signature.
 *    Reports p50 / p99 / max from the INSERT's commit to the receiver reading the body.
 * 2. Cost per join: `--joins` real joins (default 400 per round, `--rounds` 2 alternating rounds each) through
 *    JoinService in this process with no subscription, then with one subscription for `node.joined` (whose
 *    deliveries the worker makes meanwhile). Join bodies are prepared before each timed round, so the CPU
 *    counted is JoinService's and the worker's (this process) and PostgreSQL's (the postmaster and backends).
 *
 * The worker takes its settings from the environment (BETTER_COMPUTE_WEBHOOK_*; configuration.md); `--joins 0`
 * runs the latency phase alone. Nothing here asserts a speed; the numbers are printed as JSON. The machine running it may be shared.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { prepareJoinAttempt, type JoinTrust } from '../agent/join';
import { percentile } from '../agent/sim/percentiles';
import { simulatedClaims } from '../agent/sim/simulate';
import { principalOf } from '../server/authz/principal';
import { bootstrapFirstStart } from '../server/boot/bootstrap';
import { createDb } from '../server/db/client';
import { startEmbeddedDatabase } from '../server/db/embedded';
import { migrate } from '../server/db/migrate';
import { createPgPool } from '../server/db/pg';
import { JoinService } from '../server/join/join-service';
import { joinCryptoFromBundle } from '../server/pki/issuance/join-crypto';
import { loadPki } from '../server/pki/bundle/store';
import { issueJoinToken } from '../server/tokens/issue';
import { webhookSettingsFromEnv } from '../server/webhooks/config';
import { createWebhook, updateWebhook } from '../server/webhooks/subscriptions';
import { WebhookWorker } from '../server/webhooks/worker';
import { treeCpuSeconds } from './cpu';
import { exitWhenDone } from './bench-db';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '100' },
    seconds: { type: 'string', default: '30' },
    joins: { type: 'string', default: '400' },
    rounds: { type: 'string', default: '2' },
  },
});
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const JOINS = Number(values.joins);
const ROUNDS = Number(values.rounds);
const RECEIVER_SOURCE = `
const { createHmac } = require('node:crypto');
const http = require('node:http');
const { parentPort } = require('node:worker_threads');
let secret = '';
parentPort.on('message', (m) => { secret = m.secret; });
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const at = performance.timeOrigin + performance.now();
    const body = Buffer.concat(chunks).toString('utf8');
    const mac = createHmac('sha256', Buffer.from(secret.slice(6), 'base64')).update(req.headers['webhook-id'] + '.' + req.headers['webhook-timestamp'] + '.' + body).digest('base64');
    const seq = JSON.parse(body).data.seq;
    parentPort.postMessage({ seq, at, bad: req.headers['webhook-signature'] !== 'v1,' + mac });
    res.writeHead(200).end();
  });
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ url: 'http://127.0.0.1:' + server.address().port + '/hook' }));
`;
const log = (line: string) => process.stderr.write(line + '\n');
const round = (n: number) => Math.round(n * 100) / 100;

async function main() {
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-bench-webhooks-'));
  const database = await startEmbeddedDatabase(dir);
  try {
    await migrate(database.url);
    const postmaster = Number(readFileSync(path.join(dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const db = createDb(database.url, { max: 4 });
    const secret = randomBytes(32).toString('base64url');
    process.env.BETTER_COMPUTE_SECRET = secret;
    process.env.BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE = 'true';
    const first = await bootstrapFirstStart(db, { secret, trustDomain: 'bench.example.com' });
    const joinPool = await db.pool.findUniqueOrThrow({ where: { id: first.defaultPoolId! } });
    const tenantId = joinPool.ownerTenantId;
    const admin = principalOf('operator', 'op_bench', [[tenantId, 'admin']]);

    // The receiver, on a thread of its own (as it would be another machine): checks each signature and posts
    // back when each sequence number arrived, in ms since the epoch (both threads' clocks).
    const arrived = new Map<number, number>();
    let badSignatures = 0;
    const receiver = new Worker(RECEIVER_SOURCE, { eval: true });
    const url = await new Promise<string>((resolve) => receiver.once('message', (m: { url: string }) => resolve(m.url)));
    receiver.on('message', (m: { seq?: number; at?: number; bad?: boolean }) => {
      if (m.bad) badSignatures++;
      if (typeof m.seq === 'number') arrived.set(m.seq, m.at!);
    });
    const setReceiverSecret = (secret: string) => receiver.postMessage({ secret });
    const now = () => performance.timeOrigin + performance.now();

    const pg = createPgPool(database.url, 8);
    const worker = new WebhookWorker({
      pool: createPgPool(database.url, 8),
      databaseUrl: database.url,
      settings: { ...webhookSettingsFromEnv(), allowPrivate: true },
      secrets: () => [secret],
    });
    await worker.start();

    // 1. Latency at RATE events/s.
    const sub = await createWebhook(db, admin, { tenantId, url, eventTypes: ['node.connected'] });
    setReceiverSecret(sub.secret);
    log(`latency: ${RATE} events/s for ${SECONDS} s into one subscription…`);
    const committed = new Map<number, number>();
    const cpuBefore = { self: process.cpuUsage(), pg: treeCpuSeconds(postmaster) };
    const total = RATE * SECONDS;
    const started = performance.now();
    const inserts: Promise<void>[] = [];
    for (let seq = 0; seq < total; seq++) {
      const due = started + (seq * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      inserts.push(
        pg
          .query(`INSERT INTO events (tenant_id, type, data) VALUES ($1, 'node.connected', jsonb_build_object('seq', $2::int))`, [
            tenantId,
            seq,
          ])
          .then(() => {
            committed.set(seq, now());
          }),
      );
    }
    await Promise.all(inserts);
    const sentFor = performance.now() - started;
    const deadline = Date.now() + 60_000;
    while (arrived.size < total && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const cpuSelf = process.cpuUsage(cpuBefore.self);
    const cpuPg = treeCpuSeconds(postmaster) - cpuBefore.pg;
    const latencies = [...committed].filter(([seq]) => arrived.has(seq)).map(([seq, at]) => arrived.get(seq)! - at);
    const latency = {
      events: total,
      delivered: arrived.size,
      badSignatures,
      achievedRate: round(total / (sentFor / 1000)),
      p50Ms: round(percentile(latencies, 50)),
      p99Ms: round(percentile(latencies, 99)),
      maxMs: round(Math.max(...latencies)),
      // This process (the inserts' client, the worker; the receiver thread too) and PostgreSQL, per event.
      processCpuMsPerEvent: round((cpuSelf.user + cpuSelf.system) / 1000 / total),
      postgresCpuMsPerEvent: round((cpuPg * 1000) / total),
    };
    log(JSON.stringify(latency));
    const phases = (
      await pg.query(
        `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM last_attempt_at - created_at) * 1000) AS to_attempt_ms,
                                           percentile_cont(0.5) WITHIN GROUP (ORDER BY last_latency_ms) AS http_ms,
                                           percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM delivered_at - last_attempt_at) * 1000) AS to_recorded_ms
                                      FROM webhook_deliveries WHERE subscription_id = $1`,
        [sub.id],
      )
    ).rows[0];
    log(
      `medians from the outbox: commit → attempt ${Math.round(phases.to_attempt_ms)} ms, attempt ${Math.round(phases.http_ms)} ms, attempt → recorded ${Math.round(phases.to_recorded_ms)} ms`,
    );
    await updateWebhook(db, admin, { tenantId, webhookId: sub.id, enabled: false });

    if (JOINS === 0 || ROUNDS === 0) {
      process.stdout.write(`${JSON.stringify({ latency }, null, 2)}\n`);
      await worker.stop();
      await receiver.terminate();
      await pg.end();
      await db.$disconnect();
      return;
    }
    // 2. CPU per join: none vs one subscription for node.joined.
    const crypto = joinCryptoFromBundle(await loadPki(db, secret));
    const trust: JoinTrust = {
      encryptionJwk: crypto.encryptionPublicJwk,
      signingCertificateDer: Buffer.from(crypto.signingCertificate, 'base64'),
      signingKeyPin: crypto.signingKeyPin,
    };
    const service = new JoinService({ pool: pg, loadCrypto: async () => crypto, loadRootTenantId: async () => first.rootTenantId });
    const token = (
      await issueJoinToken(db, {
        tenantId,
        poolId: joinPool.id,
        siteId: joinPool.siteId,
        role: 'node',
        ttlSeconds: 3600,
        maxUses: 10_000,
        createdBy: 'bench',
      })
    ).token!;
    let machine = 0;
    const joinRound = async (label: string) => {
      const bodies: string[] = [];
      for (let i = 0; i < JOINS; i++) bodies.push((await prepareJoinAttempt({ token, trust, claims: simulatedClaims(machine++) })).body);
      await new Promise((r) => setTimeout(r, 500));
      const before = { self: process.cpuUsage(), pg: treeCpuSeconds(postmaster) };
      const t0 = performance.now();
      let next = 0;
      const lane = async () => {
        while (next < bodies.length) {
          const answer = await service.joinBody(Buffer.from(bodies[next++]!));
          if (answer.status !== 200) throw new Error(`a join answered ${answer.status}`);
        }
      };
      await Promise.all(Array.from({ length: 16 }, lane));
      const wall = performance.now() - t0;
      // Let the worker finish this round's deliveries inside the measurement.
      if (label === 'one subscription') {
        const want = await db.webhookDelivery.count({ where: { eventType: 'node.joined' } });
        const until = Date.now() + 60_000;
        while ((await db.webhookDelivery.count({ where: { eventType: 'node.joined', state: 'delivered' } })) < want && Date.now() < until)
          await new Promise((r) => setTimeout(r, 50));
      }
      const self = process.cpuUsage(before.self);
      return {
        label,
        joinsPerSecond: round(JOINS / (wall / 1000)),
        serverCpuMsPerJoin: round((self.user + self.system) / 1000 / JOINS),
        postgresCpuMsPerJoin: round(((treeCpuSeconds(postmaster) - before.pg) * 1000) / JOINS),
      };
    };
    await joinRound('warm-up');
    const joinSub = await createWebhook(db, admin, { tenantId, url, eventTypes: ['node.joined'] });
    setReceiverSecret(joinSub.secret);
    const rounds: Awaited<ReturnType<typeof joinRound>>[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      await updateWebhook(db, admin, { tenantId, webhookId: joinSub.id, enabled: false });
      log(`joins round ${r + 1}: no subscription…`);
      rounds.push(await joinRound('no subscription'));
      await updateWebhook(db, admin, { tenantId, webhookId: joinSub.id, enabled: true });
      log(`joins round ${r + 1}: one subscription for node.joined…`);
      rounds.push(await joinRound('one subscription'));
    }
    const median = (label: string, key: 'serverCpuMsPerJoin' | 'postgresCpuMsPerJoin' | 'joinsPerSecond') => {
      const xs = rounds
        .filter((x) => x.label === label)
        .map((x) => x[key])
        .sort((a, b) => a - b);
      return xs[Math.floor(xs.length / 2)]!;
    };
    const summary = Object.fromEntries(
      ['no subscription', 'one subscription'].map((label) => [
        label,
        {
          joinsPerSecond: median(label, 'joinsPerSecond'),
          serverCpuMsPerJoin: median(label, 'serverCpuMsPerJoin'),
          postgresCpuMsPerJoin: median(label, 'postgresCpuMsPerJoin'),
        },
      ]),
    );
    process.stdout.write(`${JSON.stringify({ latency, joins: { perRound: JOINS, rounds, median: summary }, badSignatures }, null, 2)}\n`);
    await worker.stop();
    await receiver.terminate();
    await pg.end();
    await db.$disconnect();
  } finally {
    await database.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

exitWhenDone(main(), 'failed');

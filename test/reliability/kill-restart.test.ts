import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt, type JoinAttempt, type JoinTrust } from '../../agent/join';
import { verifyJoinAnswer } from '../../agent/verify-answer';
import { principalOf } from '../../server/authz/principal';
import { createPool } from '../../server/pools/pools';
import { issueJoinToken } from '../../server/tokens/issue';
import { machineClaims } from '../join-harness';
import {
  defaultPool,
  newServerSecret,
  startServedDatabase,
  startServerProcess,
  type ServerDatabase,
  type ServerProcess,
} from '../server-process';
import { rawHttpClient } from './http-client';
import { runSeed, seededRandom } from './seeded-random';

// Reliability figure (issue 8): the server is killed with SIGKILL at random moments while 1,000 machines
// join, and started again; agents retry the same request when their connection dies. Afterwards, for every
// token, the uses spent, the nodes joined, the certificates recorded and the audit rows agree, and each
// token admitted exactly min(maxUses, machines that tried it): no admission half-written, none lost, none
// doubled. Kill points are drawn from a seed printed at the start (RELIABILITY_SEED replays it).

const JOINS = 1000;
const CONCURRENCY = 16;
const KILLS = 4;
const MAX_USES = [1, 2, 5, 20, 60, 150, 400, 1000];
const MAX_TRIES = 30;

const seed = runSeed();
const random = seededRandom(seed);
const secret = newServerSecret();
let database: ServerDatabase;
let server: ServerProcess;
let trust: JoinTrust;

beforeAll(async () => {
  process.stdout.write(`kill-restart: RELIABILITY_SEED=${seed}\n`);
  ({ database, server, trust } = await startServedDatabase('kill_restart', secret));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await database?.close();
});

interface Machine {
  token: number;
  attempt: JoinAttempt;
  status?: number;
  body?: Buffer;
  tries: number;
}

describe('SIGKILL during joins', () => {
  it(`leaves every token consistent after ${KILLS} kills during ${JOINS} joins (seed ${seed})`, { timeout: 240_000 }, async () => {
    const db = database.db;
    const home = await defaultPool(db);
    const system = principalOf('local', 'reliability-test', [[home.ownerTenantId, 'admin']]);
    // One pool per token, so "nodes joined with this token" is "nodes in its pool".
    const tokens = [];
    for (const [i, maxUses] of MAX_USES.entries()) {
      const pool = await createPool(db, system, { tenantId: home.ownerTenantId, siteId: home.siteId, name: `kill-${i}`, agent: 'bcd' });
      const issued = await issueJoinToken(db, {
        tenantId: home.ownerTenantId,
        poolId: pool.id,
        siteId: home.siteId,
        role: 'node',
        ttlSeconds: 3600,
        maxUses,
        createdBy: 'test:kill-restart',
      });
      tokens.push({ id: issued.record.id, token: issued.token!, maxUses, poolId: pool.id });
    }
    const machines: Machine[] = [];
    for (let i = 0; i < JOINS; i++) {
      const token = random.int(0, tokens.length - 1);
      machines.push({
        token,
        attempt: await prepareJoinAttempt({ token: tokens[token]!.token, trust, claims: machineClaims() }),
        tries: 0,
      });
    }
    const killAfter = Array.from({ length: KILLS }, () => random.int(20, JOINS - 50)).sort((a, b) => a - b);
    const killDelayMs = killAfter.map(() => random.int(0, 40));

    // The current server; agents wait on `up` while it restarts.
    let up: Promise<void> = Promise.resolve();
    let answered = 0;
    let client = rawHttpClient(CONCURRENCY);
    const join = async (machine: Machine) => {
      for (;;) {
        await up;
        machine.tries++;
        if (machine.tries > MAX_TRIES) throw new Error(`a machine got no answer in ${MAX_TRIES} tries`);
        try {
          const answer = await client.send('POST', `${server.url}/api/compute/v1/join`, {
            body: machine.attempt.body,
            headers: { 'content-type': 'application/json' },
          });
          machine.status = answer.status;
          machine.body = answer.body;
          answered++;
          return;
        } catch {
          // The connection died with the server: retry the same request once it is back, as bcd does.
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    };
    let next = 0;
    const agents = Array.from({ length: CONCURRENCY }, async () => {
      while (next < machines.length) await join(machines[next++]!);
    });
    const killer = (async () => {
      for (const [k, after] of killAfter.entries()) {
        while (answered < after) await new Promise((r) => setTimeout(r, 2));
        await new Promise((r) => setTimeout(r, killDelayMs[k]));
        let restarted!: () => void;
        up = new Promise((r) => (restarted = r));
        await server.stop('SIGKILL');
        client.close();
        client = rawHttpClient(CONCURRENCY);
        server = await startServerProcess({ databaseUrl: database.url, secret, port: server.port });
        restarted();
      }
    })();
    await Promise.all([...agents, killer]);
    client.close();

    const statuses = machines.reduce<Record<number, number>>((acc, m) => ({ ...acc, [m.status!]: (acc[m.status!] ?? 0) + 1 }), {});
    const retried = machines.filter((m) => m.tries > 1).length;
    // Each machine ends admitted or refused (a replay of its own lost admission is refused too), never failed.
    expect(
      Object.keys(statuses).every((s) => s === '200' || s === '403'),
      JSON.stringify(statuses),
    ).toBe(true);

    // Per token: every count that an admission writes agrees with the uses it spent.
    const summary: string[] = [];
    for (const [i, t] of tokens.entries()) {
      const tried = machines.filter((m) => m.token === i).length;
      const spent = t.maxUses - (await db.joinToken.findUniqueOrThrow({ where: { id: t.id } })).usesLeft;
      const nodes = await db.node.findMany({ where: { poolId: t.poolId }, select: { id: true } });
      const certs = await db.nodeCert.findMany({ where: { nodeId: { in: nodes.map((n) => n.id) } }, select: { nodeId: true } });
      const audit = await db.auditEntry.count({
        where: { actor: `join-token:${t.id}`, action: { in: ['node.joined', 'node.reclaimed'] } },
      });
      const events = await db.event.count({ where: { type: 'node.joined', data: { path: ['tokenId'], equals: t.id } } });
      const context = `token ${i} (maxUses ${t.maxUses}, ${tried} machines, seed ${seed})`;
      expect(
        { nodes: nodes.length, certs: certs.length, nodesWithCert: new Set(certs.map((c) => c.nodeId)).size, audit, events },
        context,
      ).toEqual({
        nodes: spent,
        certs: spent,
        nodesWithCert: spent,
        audit: spent,
        events: spent,
      });
      expect(spent, context).toBe(Math.min(t.maxUses, tried));
      summary.push(`${spent}/${t.maxUses}`);
    }

    // Every 200 an agent received names a node that was committed, with the certificate it was given.
    const joined = machines.filter((m) => m.status === 200);
    for (const m of joined) {
      const answer = verifyJoinAnswer(JSON.parse(m.body!.toString()), {
        signingKeyPin: trust.signingKeyPin,
        signingCertificateDer: trust.signingCertificateDer,
        csrSha256: m.attempt.keys.csrSha256,
        publicKeySpkiDer: m.attempt.keys.spkiDer,
        expectedRole: 'node',
      });
      if (answer.status !== 'joined') throw new Error('a 200 that is not a join');
      const node = await db.node.findUnique({ where: { id: answer.nodeId }, include: { certs: true } });
      expect(node?.poolId).toBe(tokens[m.token]!.poolId);
      const leaf = Buffer.from(answer.certificateChain[0]!, 'base64');
      expect(node!.certs.some((c) => Buffer.from(c.der).equals(leaf))).toBe(true);
    }
    const committed = tokens.length && (await db.node.count({ where: { poolId: { in: tokens.map((t) => t.poolId) } } }));
    process.stdout.write(
      `kill-restart (seed ${seed}): ${KILLS} kills after ${killAfter.join(', ')} answers; answers ${JSON.stringify(statuses)}; ` +
        `${retried} machines retried; ${committed} nodes committed, ${joined.length} admissions answered (${committed - joined.length} lost with a killed server, then refused as replays); uses spent per token ${summary.join(' ')}\n`,
    );
  });
});

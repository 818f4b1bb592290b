import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt, type JoinTrust } from '../../agent/join';
import { verifyJoinAnswer } from '../../agent/verify-answer';
import { JOIN_REFUSED } from '../../protocol/join-wire';
import { issueJoinToken } from '../../server/tokens/issue';
import { machineClaims } from '../join-harness';
import { defaultPool, newServerSecret, startServedDatabase, type ServerDatabase, type ServerProcess } from '../server-process';
import { forEachConcurrently, rawHttpClient } from './http-client';

// Reliability figure (issue 8): two server processes, each with its own connection to one external
// PostgreSQL through DATABASE_URL (two instances, not one node:cluster), share a token of maxUses 100 under
// load and admit exactly 100. The only thing they share is the database; nothing in either process knows
// about the other.

const MAX_USES = 100;
const JOINS = 300;
const PER_SERVER_CONCURRENCY = 32;

let database: ServerDatabase;
let servers: ServerProcess[] = [];
let trust: JoinTrust;
const secret = newServerSecret();

beforeAll(async () => {
  // The first start's work (root tenant, default pool, PKI) is done first, so both servers start together
  // on a database that has it, as the operator guide asks of instances sharing one database.
  ({ database, servers, trust } = await startServedDatabase('two_servers', secret, { count: 2, trustDomain: 'two-servers.example.com' }));
}, 120_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await database?.close();
});

describe('two server processes on one PostgreSQL', () => {
  it(`admit exactly ${MAX_USES} of ${JOINS} joins on one shared token`, { timeout: 120_000 }, async () => {
    const db = database.db;
    const pool = await defaultPool(db);
    const { token, record } = await issueJoinToken(db, {
      tenantId: pool.ownerTenantId,
      poolId: pool.id,
      siteId: pool.siteId,
      role: 'node',
      ttlSeconds: 3600,
      maxUses: MAX_USES,
      createdBy: 'test:two-servers',
    });
    const attempts = await Promise.all(
      Array.from({ length: JOINS }, () => prepareJoinAttempt({ token: token!, trust, claims: machineClaims() })),
    );

    const clients = servers.map(() => rawHttpClient(PER_SERVER_CONCURRENCY));
    const answers = new Array<{ server: number; status: number; body: Buffer }>(JOINS);
    await forEachConcurrently(JOINS, PER_SERVER_CONCURRENCY * servers.length, async (i) => {
      const server = i % servers.length;
      const answer = await clients[server]!.send('POST', `${servers[server]!.url}/api/compute/v1/join`, {
        body: attempts[i]!.body,
        headers: { 'content-type': 'application/json' },
      });
      answers[i] = { server, status: answer.status, body: answer.body };
    });
    clients.forEach((c) => c.close());

    const admitted = answers.flatMap((a, i) => (a.status === 200 ? [i] : []));
    const refused = answers.filter((a) => a.status === 403);
    expect(admitted).toHaveLength(MAX_USES);
    expect(refused).toHaveLength(JOINS - MAX_USES);
    expect(refused.every((a) => a.body.equals(JOIN_REFUSED.body))).toBe(true);
    const perServer = servers.map((_, s) => answers.filter((a) => a.server === s && a.status === 200).length);
    process.stdout.write(`two-servers: admitted per server ${perServer.join(' + ')} = ${MAX_USES}\n`);

    const nodeIds = admitted.map((i) => {
      const answer = verifyJoinAnswer(JSON.parse(answers[i]!.body.toString()), {
        signingKeyPin: trust.signingKeyPin,
        signingCertificateDer: trust.signingCertificateDer,
        csrSha256: attempts[i]!.keys.csrSha256,
        publicKeySpkiDer: attempts[i]!.keys.spkiDer,
        expectedRole: 'node',
      });
      if (answer.status !== 'joined') throw new Error('a 200 that is not a join');
      return answer.nodeId;
    });
    expect((await db.joinToken.findUniqueOrThrow({ where: { id: record.id } })).usesLeft).toBe(0);
    const nodes = await db.node.findMany({ where: { poolId: pool.id }, select: { id: true } });
    expect(nodes.map((n) => n.id).sort()).toEqual(nodeIds.sort());
    expect(await db.nodeCert.count({ where: { nodeId: { in: nodeIds } } })).toBe(MAX_USES);
    expect(await db.auditEntry.count({ where: { actor: `join-token:${record.id}`, action: 'node.joined' } })).toBe(MAX_USES);
    // Neither server logged an error: every refusal was a decision, not a failure.
    expect(servers.flatMap((s) => s.log).filter((line) => line.includes('"level":"error"'))).toEqual([]);
  });
});

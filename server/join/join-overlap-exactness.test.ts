import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../../agent/keys';
import { testDatabaseUrl, testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createJoinHarness, mintToken, sealedJoinBodies, type JoinHarness } from '../../test/join-harness';
import { createPgPool } from '../db/pg';
import { JoinService } from './join-service';
import { ThreadedPreparer } from './prepare-worker-pool';
import { JOIN_REFUSED } from '../../protocol/join-wire';

// Issue 13's exactness figure for the overlapped pipeline: 200 joins arriving together on one token of
// maxUses K admit exactly K, 20 times over, while each JoinService keeps up to three admission transactions
// in flight on separate connections. Two instances (two processes' pools) take the joins alternately, and
// small batches make every round a chain of overlapping transactions that only the token row's lock orders.

const JOINS = 200;
const ROUNDS = 20;
const MAX_BATCH = 8;
const IN_FLIGHT = 3;

let h: JoinHarness;
const preparer = new ThreadedPreparer(1);
const pools: pg.Pool[] = [];
const keys: NodeKeyAndCsr[] = Array.from({ length: JOINS }, () => generateNodeKeyAndCsr());

beforeAll(async () => {
  h = await createJoinHarness();
  preparer.start();
});
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end()));
  await preparer.close();
});

function overlappedService(keyPrefix: string): JoinService {
  const pool = createPgPool(testDatabaseUrl(), IN_FLIGHT + 1);
  pools.push(pool);
  return new JoinService({
    pool,
    loadCrypto: async () => h.crypto,
    loadRootTenantId: async () => h.rootTenantId,
    maxBatch: MAX_BATCH,
    maxInFlight: IN_FLIGHT,
    refusalLimit: { limit: ROUNDS * JOINS, window: '60 seconds', keyPrefix },
    preparer,
  });
}

describe(`maxUses through the overlapped admission pipeline, ${JOINS} concurrent joins, ${ROUNDS} rounds`, () => {
  it.each([1, 3, 10])('admits exactly %i each time, with admission transactions overlapping', { timeout: 240_000 }, async (maxUses) => {
    const db = testDb();
    const keyPrefix = `overlap-${randomBytes(4).toString('hex')}`;
    const services = [overlappedService(keyPrefix), overlappedService(keyPrefix)] as const;
    const t = await createTestTenant(db, { label: `overlap-k${maxUses}` });

    for (let round = 0; round < ROUNDS; round++) {
      const context = `K=${maxUses}, round ${round + 1}`;
      const poolId = await t.newPool();
      const { token, id } = await mintToken(t, { maxUses, poolId });
      const requests = (await sealedJoinBodies(h, token!, JOINS, keys)).map((body) => Buffer.from(body));
      const answers = await Promise.all(requests.map((body, i) => services[i % 2]!.joinBody(body)));

      const admitted = answers.flatMap((answer, i) => (answer.status === 200 ? [i] : []));
      expect(admitted, context).toHaveLength(maxUses);
      const refused = answers.filter((answer) => answer.status === 403);
      expect(refused, context).toHaveLength(JOINS - maxUses);
      expect(
        refused.every((answer) => answer.body.equals(JOIN_REFUSED.body)),
        context,
      ).toBe(true);
      expect((await db.joinToken.findUniqueOrThrow({ where: { id } })).usesLeft, context).toBe(0);
      const nodes = await db.node.findMany({ where: { poolId }, select: { id: true } });
      expect(nodes, context).toHaveLength(maxUses);
      expect(await db.nodeCert.count({ where: { nodeId: { in: nodes.map((n) => n.id) } } }), context).toBe(maxUses);
      expect(await db.auditEntry.count({ where: { actor: `join-token:${id}`, action: 'node.joined' } }), context).toBe(maxUses);

      for (const i of admitted) keys[i] = generateNodeKeyAndCsr();
    }
    // The rounds ran through the pipeline: many batches, and transactions in flight together.
    for (const service of services) {
      const stats = service.pipelineStats;
      expect(stats.joins).toBe((ROUNDS * JOINS) / 2);
      expect(stats.batches).toBeGreaterThanOrEqual((ROUNDS * JOINS) / 2 / MAX_BATCH);
      expect(stats.peakInFlight).toBeGreaterThanOrEqual(2);
    }
    const reasons = await db.event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' }, select: { data: true } });
    expect(reasons).toHaveLength(ROUNDS * (JOINS - maxUses));
    expect(reasons.every((e) => (e.data as { reason: string }).reason === 'join-token:exhausted')).toBe(true);
  });
});

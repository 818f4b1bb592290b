import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createJoinHarness, createJoinServicePair, mintToken, sealedJoinBodies, type JoinHarness } from '../../test/join-harness';
import { JoinService } from './join-service';
import { JOIN_REFUSED, type JoinAnswer } from '../../protocol/join-wire';

// maxUses and revocation are exact ACROSS transactions: two JoinService instances (as two API processes
// would be) each admit on their own pool, so their batches are separate transactions that only the token
// row's lock orders.

let h: JoinHarness;
const closers: (() => Promise<void>)[] = [];
beforeAll(async () => {
  h = await createJoinHarness();
});
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
});
const db = () => testDb();

function twoInstances(maxBatch: number): [JoinService, JoinService] {
  const pair = createJoinServicePair(h, { maxBatch });
  closers.push(pair.close);
  return pair.services;
}

/** Join request bodies of `n` distinct trusted machines, sealed ahead so the joins arrive together. */
const bodies = async (token: string, n: number): Promise<unknown[]> => (await sealedJoinBodies(h, token, n)).map((b) => JSON.parse(b));

/** Sends the bodies alternately to the two instances, all at once. */
const split = (services: [JoinService, JoinService], requests: unknown[]): Promise<JoinAnswer[]> =>
  Promise.all(requests.map((body, i) => services[i % 2]!.join(body)));

/** Holds a connection of its own, for a transaction that locks a token row while joins arrive. */
async function holder() {
  const client = await h.pool.connect();
  const pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
  return { client, pid };
}

/**
 * Runs `lockSql` on the token in a transaction of its own, sends the joins split over both instances,
 * waits until a transaction of each waits on that lock, then ends it with `end` and returns the answers.
 */
async function whileTokenLocked(
  tokenId: string,
  lockSql: string,
  services: [JoinService, JoinService],
  requests: unknown[],
  end: 'COMMIT' | 'ROLLBACK',
): Promise<JoinAnswer[]> {
  const lock = await holder();
  try {
    await lock.client.query('BEGIN');
    await lock.client.query(lockSql, [tokenId]);
    const pending = split(services, requests);
    await untilBlocked(lock.pid, 2);
    await lock.client.query(end);
    return await pending;
  } finally {
    lock.client.release();
  }
}

/**
 * Waits (deterministically, on PostgreSQL's lock graph) until `count` backends wait, directly or through
 * another waiter, for `pid`'s locks: a second transaction waiting for a locked row queues behind the first
 * waiter's tuple lock, so pg_blocking_pids names that waiter, not `pid`.
 */
async function untilBlocked(pid: number, count: number) {
  for (let i = 0; ; i++) {
    const rows = await db().$queryRawUnsafe<{ n: number }[]>(
      `WITH RECURSIVE waiting(pid) AS (
         SELECT pid FROM pg_stat_activity WHERE ${Number(pid)} = ANY(pg_blocking_pids(pid))
         UNION
         SELECT a.pid FROM pg_stat_activity a JOIN waiting w ON w.pid = ANY(pg_blocking_pids(a.pid))
       )
       SELECT count(*)::int AS n FROM waiting`,
    );
    if (rows[0]!.n >= count) return;
    if (i > 1000) throw new Error(`only ${rows[0]!.n} of ${count} admission transactions reached the token lock`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const refusalReasons = async (tenantId: string) =>
  (await db().event.findMany({ where: { tenantId, type: 'security.join.refused' }, orderBy: { id: 'asc' } })).map(
    (e) => (e.data as { reason: string }).reason,
  );

describe('maxUses across transactions', () => {
  it.each([1, 3])('admits exactly 10 of 50 joins split across two instances (maxBatch %i) and refuses 40', async (maxBatch) => {
    const t = await createTestTenant(db());
    const { token, id } = await mintToken(t, { maxUses: 10 });
    const services = twoInstances(maxBatch);
    const answers = await split(services, await bodies(token!, 50));

    expect(answers.filter((a) => a.status === 200)).toHaveLength(10);
    const refused = answers.filter((a) => a.status === 403);
    expect(refused).toHaveLength(40);
    expect(refused.every((a) => a.body.equals(JOIN_REFUSED.body))).toBe(true);
    expect((await db().joinToken.findUniqueOrThrow({ where: { id } })).usesLeft).toBe(0);
    const nodes = await db().node.findMany({ where: { tenantId: t.tenantId } });
    expect(nodes).toHaveLength(10);
    expect(await db().nodeCert.count({ where: { nodeId: { in: nodes.map((n) => n.id) } } })).toBe(10);
    expect(await refusalReasons(t.tenantId)).toEqual(Array(40).fill('join-token:exhausted'));
  });

  it('stays exact when both instances are inside a transaction waiting on the token at once', async () => {
    const t = await createTestTenant(db());
    const { token, id } = await mintToken(t, { maxUses: 10 });
    const services = twoInstances(4);
    const requests = await bodies(token!, 50);
    // One batch of each instance holds an open transaction blocked on the token row.
    const answers = await whileTokenLocked(id, 'SELECT 1 FROM join_tokens WHERE id = $1 FOR UPDATE', services, requests, 'COMMIT');
    expect(answers.filter((a) => a.status === 200)).toHaveLength(10);
    expect(answers.filter((a) => a.status === 403)).toHaveLength(40);
    expect((await db().joinToken.findUniqueOrThrow({ where: { id } })).usesLeft).toBe(0);
    expect(await db().node.count({ where: { tenantId: t.tenantId } })).toBe(10);
    expect(await refusalReasons(t.tenantId)).toEqual(Array(40).fill('join-token:exhausted'));
  });
});

describe('revocation racing admission batches', () => {
  it('refuses every join that waited on the token while its revocation was being committed', async () => {
    const t = await createTestTenant(db());
    const { token, id } = await mintToken(t, { maxUses: 6 });
    const services = twoInstances(2);
    const requests = await bodies(token!, 6);
    // Both instances read the token under its lock: they wait for the revocation's outcome.
    const answers = await whileTokenLocked(id, 'UPDATE join_tokens SET revoked_at = now() WHERE id = $1', services, requests, 'COMMIT');
    expect(answers.map((a) => a.status)).toEqual([403, 403, 403, 403, 403, 403]);
    expect(answers.every((a) => a.body.equals(JOIN_REFUSED.body))).toBe(true);
    expect(await db().node.count({ where: { tenantId: t.tenantId } })).toBe(0);
    const row = await db().joinToken.findUniqueOrThrow({ where: { id } });
    expect(row.usesLeft).toBe(6);
    expect(row.revokedAt).not.toBeNull();
    expect(await refusalReasons(t.tenantId)).toEqual(Array(6).fill('join-token:revoked'));
  });

  it('admits the waiting joins when the racing revocation rolls back', async () => {
    const t = await createTestTenant(db());
    const { token, id } = await mintToken(t, { maxUses: 6 });
    const services = twoInstances(2);
    const requests = await bodies(token!, 6);
    const answers = await whileTokenLocked(id, 'UPDATE join_tokens SET revoked_at = now() WHERE id = $1', services, requests, 'ROLLBACK');
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(await db().node.count({ where: { tenantId: t.tenantId } })).toBe(6);
    const row = await db().joinToken.findUniqueOrThrow({ where: { id } });
    expect(row.usesLeft).toBe(0);
    expect(row.revokedAt).toBeNull();
    expect(await refusalReasons(t.tenantId)).toEqual([]);
  });
});

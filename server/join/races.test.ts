import { beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt } from '../../agent/join';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createJoinHarness, machineClaims, mintToken, untilBlockedBy, type JoinHarness } from '../../test/join-harness';
import { RaceWindow } from './races';
import { JOIN_REFUSED } from '../../protocol/join-wire';

describe('RaceWindow', () => {
  it('names a machine that a batch admitted after the join arrived, and only then', () => {
    const w = new RaceWindow();
    w.record(['before']);
    const since = w.enter();
    expect(w.raced(since, 'before')).toBe(false); // admitted before this join arrived: a join again, not a race
    w.record(['aa', 'bb']);
    w.record([]);
    expect(w.raced(since, 'aa')).toBe(true);
    expect(w.raced(since, 'bb')).toBe(true);
    expect(w.raced(since, 'cc')).toBe(false);
    const later = w.enter();
    expect(w.raced(later, 'aa')).toBe(false);
    w.leave(since);
    w.leave(later);
  });

  it('keeps only what a join still in flight may ask about', () => {
    const w = new RaceWindow();
    const first = w.enter();
    w.record(['aa']);
    const second = w.enter();
    w.record(['bb']);
    expect(w.retained).toBe(2);
    w.leave(first);
    expect(w.retained).toBe(1); // `second` arrived after 'aa' was admitted
    expect(w.raced(second, 'bb')).toBe(true);
    w.leave(second);
    expect(w.retained).toBe(0);
    w.record(['cc']);
    expect(w.retained).toBe(0); // nobody in flight
  });
});

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});

/**
 * Holds the token row so the first join's batch waits inside its transaction, sends the second join while
 * it waits (it lands in the next batch), then lets both finish. Returns both answers in order.
 */
async function inConsecutiveBatches(tokenId: string, first: unknown, second: unknown) {
  const holder = await h.pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM join_tokens WHERE id = $1 FOR UPDATE', [tokenId]);
    const holderPid = (await holder.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    const a = h.service.join(first);
    await untilBlockedBy(holderPid, 'the first join never reached the token lock');
    const b = h.service.join(second);
    await new Promise((r) => setTimeout(r, 50));
    await holder.query('COMMIT');
    return await Promise.all([a, b]);
  } finally {
    holder.release();
  }
}

describe('two joins of one machine in consecutive batches', () => {
  it.each([false, true])('end with one CONFLICT and one node, never a reclaim (allowReclaim %s)', async (allowReclaim) => {
    const db = testDb();
    const t = await createTestTenant(db);
    const claims = machineClaims();
    const minted = await mintToken(t, { maxUses: 2, allowReclaim });
    const [a, b] = await Promise.all([1, 2].map(() => prepareJoinAttempt({ token: minted.token!, trust: h.trust, claims })));

    const answers = await inConsecutiveBatches(minted.id, JSON.parse(a!.body), JSON.parse(b!.body));
    expect(answers.map((x) => x.status)).toEqual([200, 409]);
    expect(JSON.parse(answers[1]!.body.toString())).toEqual({ code: 'CONFLICT', message: 'This machine joined concurrently; retry' });
    const nodes = await db.node.findMany({ where: { tenantId: t.tenantId } });
    expect(nodes).toHaveLength(1);
    expect(nodes[0]!.identityGeneration).toBe(1);
    const certs = await db.nodeCert.findMany({ where: { nodeId: nodes[0]!.id } });
    expect(certs.map((c) => c.revokedAt)).toEqual([null]);
    // The racing join spent no use.
    expect((await db.joinToken.findUniqueOrThrow({ where: { id: minted.id } })).usesLeft).toBe(1);
  });

  it('answers a racing join with a bad token the uniform refusal, never CONFLICT', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const claims = machineClaims();
    const minted = await mintToken(t, { maxUses: 2, allowReclaim: true });
    const real = await prepareJoinAttempt({ token: minted.token!, trust: h.trust, claims });
    // Someone who knows the machine's claims (they are not secret) but holds no token of ours.
    const forged = await prepareJoinAttempt({ token: `bcjt_jt_01m8ma917s0he7rk4w7m1b0zvj.${'A'.repeat(43)}`, trust: h.trust, claims });
    const answers = await inConsecutiveBatches(minted.id, JSON.parse(real.body), JSON.parse(forged.body));
    expect(answers.map((x) => x.status)).toEqual([200, 403]);
    expect(answers[1]!.body.equals(JOIN_REFUSED.body)).toBe(true);
    const refused = await db.event.findMany({ where: { tenantId: h.rootTenantId, type: 'security.join.refused' } });
    expect(
      refused.some(
        (e) =>
          (e.data as { csrSha256: string }).csrSha256 === forged.keys.csrSha256 &&
          (e.data as { reason: string }).reason === 'join-token:unknown',
      ),
    ).toBe(true);
    expect((await db.joinToken.findUniqueOrThrow({ where: { id: minted.id } })).usesLeft).toBe(1);
  });

  it('still treats a machine joining again after its first join answered as a join again', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const claims = machineClaims();
    const minted = await mintToken(t, { maxUses: 2 });
    const first = await prepareJoinAttempt({ token: minted.token!, trust: h.trust, claims });
    expect((await h.service.join(JSON.parse(first.body))).status).toBe(200);
    const again = await prepareJoinAttempt({ token: minted.token!, trust: h.trust, claims });
    // Not a race: refused as a known machine without allowReclaim.
    expect((await h.service.join(JSON.parse(again.body))).status).toBe(403);
    const events = await db.event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' } });
    expect(events.map((e) => (e.data as { reason: string }).reason)).toEqual(['join:reclaim']);
  });
});

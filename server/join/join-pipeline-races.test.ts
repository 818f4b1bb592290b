import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt } from '../../agent/join';
import { testDatabaseUrl, testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createJoinHarness, machineClaims, mintToken, untilBlockedBy, type JoinHarness } from '../../test/join-harness';
import { createPgPool } from '../db/pg';
import { JoinService } from './join-service';

// Overlapped admission transactions and a machine joining twice: the second join arrives while the first
// one's batch has decided and is writing. A batch started beside it could not see the uncommitted node,
// and once the first commits it would find the node and take the second join for a machine joining again
// (a reclaim, or `join:reclaim`). The pipeline holds the second join back until the first batch ends, so
// RaceWindow answers it CONFLICT, as two joins of one machine in one batch are answered.

let h: JoinHarness;
const pool = createPgPool(testDatabaseUrl(), 6);
beforeAll(async () => {
  h = await createJoinHarness();
});
afterAll(async () => {
  await pool.end();
});

describe('a machine joining again while its first batch commits', () => {
  it.each([false, true])('is answered CONFLICT, never a reclaim (allowReclaim %s)', async (allowReclaim) => {
    const db = testDb();
    const t = await createTestTenant(db);
    const claims = machineClaims();
    const minted = await mintToken(t, { maxUses: 2, allowReclaim });
    const [a, b] = await Promise.all([1, 2].map(() => prepareJoinAttempt({ token: minted.token!, trust: h.trust, claims })));
    // Overlap from the first waiting join, so nothing but the hold-back keeps the second join out.
    const service = new JoinService({
      pool,
      loadCrypto: async () => h.crypto,
      loadRootTenantId: async () => h.rootTenantId,
      maxInFlight: 3,
      minOverlapBatch: 1,
    });

    // The first batch decides, then its write waits on the audit log, which this transaction holds.
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE audit_log IN EXCLUSIVE MODE');
      const holderPid = (await holder.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      const first = service.join(JSON.parse(a!.body));
      await untilBlockedBy(holderPid, 'the first join never reached its write');
      const second = service.join(JSON.parse(b!.body));
      await new Promise((r) => setTimeout(r, 100));
      await holder.query('COMMIT');
      const answers = await Promise.all([first, second]);
      expect(answers.map((x) => x.status)).toEqual([200, 409]);
    } finally {
      holder.release();
    }
    const nodes = await db.node.findMany({ where: { tenantId: t.tenantId } });
    expect(nodes).toHaveLength(1);
    expect(nodes[0]!.identityGeneration).toBe(1);
    expect((await db.joinToken.findUniqueOrThrow({ where: { id: minted.id } })).usesLeft).toBe(1);
    expect(await db.event.count({ where: { tenantId: t.tenantId, type: 'security.join.refused' } })).toBe(0);
  });
});

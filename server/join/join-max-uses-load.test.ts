import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../../agent/keys';
import { verifyJoinAnswer } from '../../agent/verify-answer';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createJoinHarness, createJoinServicePair, mintToken, sealedJoinBodies, type JoinHarness } from '../../test/join-harness';
import { ThreadedPreparer } from './prepare-worker-pool';
import { JOIN_REFUSED } from '../../protocol/join-wire';

// Reliability figure (issue 8): 200 joins arriving together on one token of maxUses K admit exactly K,
// every time. Each round sends the 200 bodies at once, alternately to two JoinService instances (two
// processes' pools, so two sets of transactions racing for the token's lock); the batch size changes
// from round to round, so the race is run with one join per transaction as well as with whole batches.

const JOINS = 200;
const ROUNDS = 20;
const BATCH_SIZES = [1, 7, 128];

let h: JoinHarness;
// The server's preparation thread (as in production), so CSR checks and seal opening run beside the
// agents' sealing on the other core.
const preparer = new ThreadedPreparer(1);
const closers: (() => Promise<void>)[] = [];
// One key and CSR per machine slot, reused across rounds while it was never certified: only the K
// admitted keys are replaced (a certified key joining again is a replay), so a round seals, not keygens.
const keys: NodeKeyAndCsr[] = Array.from({ length: JOINS }, () => generateNodeKeyAndCsr());

beforeAll(async () => {
  h = await createJoinHarness();
  preparer.start();
});
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
  await preparer.close();
});

describe(`maxUses under ${JOINS} concurrent joins, ${ROUNDS} rounds each`, () => {
  it.each([1, 3, 10])(
    'admits exactly %i each time, refuses the rest uniformly, and spends exactly that many uses',
    { timeout: 180_000 },
    async (maxUses) => {
      const db = testDb();
      const pairs = BATCH_SIZES.map((maxBatch) => createJoinServicePair(h, { maxBatch, refusalLimit: ROUNDS * JOINS, preparer }));
      closers.push(...pairs.map((p) => p.close));
      const t = await createTestTenant(db, { label: `load-k${maxUses}` });

      for (let round = 0; round < ROUNDS; round++) {
        const context = `K=${maxUses}, round ${round + 1}`;
        const poolId = await t.newPool();
        const { token, id } = await mintToken(t, { maxUses, poolId });
        const requests = (await sealedJoinBodies(h, token!, JOINS, keys)).map((body) => Buffer.from(body));
        const [a, b] = pairs[round % pairs.length]!.services;
        const answers = await Promise.all(requests.map((body, i) => (i % 2 ? b : a).joinBody(body)));

        const admitted = answers.flatMap((answer, i) => (answer.status === 200 ? [i] : []));
        const refused = answers.filter((answer) => answer.status === 403);
        expect(admitted, context).toHaveLength(maxUses);
        expect(refused, context).toHaveLength(JOINS - maxUses);
        expect(
          refused.every((answer) => answer.body.equals(JOIN_REFUSED.body)),
          context,
        ).toBe(true);

        // Every admission is a signed answer for its own key, naming a node that exists.
        const nodeIds = admitted.map((i) => {
          const verified = verifyJoinAnswer(JSON.parse(answers[i]!.body.toString()), {
            signingKeyPin: h.trust.signingKeyPin,
            signingCertificateDer: h.trust.signingCertificateDer,
            csrSha256: keys[i]!.csrSha256,
            publicKeySpkiDer: keys[i]!.spkiDer,
            expectedRole: 'node',
          });
          if (verified.status !== 'joined') throw new Error(`${context}: a 200 that is not a join`);
          return verified.nodeId;
        });
        const nodes = await db.node.findMany({ where: { poolId }, select: { id: true } });
        expect(nodes.map((n) => n.id).sort(), context).toEqual([...nodeIds].sort());
        expect((await db.joinToken.findUniqueOrThrow({ where: { id } })).usesLeft, context).toBe(0);
        expect(await db.nodeCert.count({ where: { nodeId: { in: nodeIds } } }), context).toBe(maxUses);
        expect(await db.auditEntry.count({ where: { actor: `join-token:${id}`, action: 'node.joined' } }), context).toBe(maxUses);

        for (const i of admitted) keys[i] = generateNodeKeyAndCsr();
      }
      const reasons = await db.event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' }, select: { data: true } });
      expect(reasons).toHaveLength(ROUNDS * (JOINS - maxUses));
      expect(reasons.every((e) => (e.data as { reason: string }).reason === 'join-token:exhausted')).toBe(true);
    },
  );
});

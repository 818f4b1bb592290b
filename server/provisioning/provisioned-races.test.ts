import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt } from '../../agent/join';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, createJoinServicePair, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import type { JoinService } from '../join/join-service';
import { createPkiSurface } from './pki-surface';

// Two provisioned tokens for one node, presented at once by two machines: whatever is admitted, the node ends
// with one live certificate, of its current identity generation (one step per admission).

let h: JoinHarness;
const closers: (() => Promise<void>)[] = [];
beforeAll(async () => {
  h = await createJoinHarness();
});
afterAll(async () => {
  for (const close of closers) await close();
});
const db = () => testDb();

async function raceOnOneNode(t: TestTenant, send: (bodies: unknown[]) => Promise<{ status: number }[]>) {
  const first = await agentJoin(h, (await mintToken(t)).token!, machineClaims());
  const nodeId = first.answer!.nodeId;
  const tokens = await Promise.all(
    [1, 2].map(
      async () =>
        (
          await createPkiSurface(db()).issueJoinToken({
            role: 'provisioned',
            tenantId: t.tenantId,
            siteId: t.siteId,
            poolId: t.poolId,
            nodeId,
            ttlSeconds: 600,
            createdBy: 'module:test',
          })
        ).token!,
    ),
  );
  const bodies = await Promise.all(
    tokens.map(async (token) =>
      JSON.parse((await prepareJoinAttempt({ token, trust: h.trust, claims: machineClaims(), role: 'provisioned' })).body),
    ),
  );
  const answers = await send(bodies);
  const admitted = answers.filter((a) => a.status === 200).length;
  for (const a of answers) expect([200, 409]).toContain(a.status);
  expect(admitted).toBeGreaterThanOrEqual(1);
  const node = await db().node.findUniqueOrThrow({ where: { id: nodeId } });
  expect(node.identityGeneration).toBe(1 + admitted);
  const live = await db().nodeCert.findMany({ where: { nodeId, revokedAt: null } });
  expect(live.map((c) => c.identityGeneration)).toEqual([node.identityGeneration]);
}

describe('provisioned joins racing for one node', () => {
  it('in one batch of one instance', async () => {
    const t = await createTestTenant(db());
    const service: JoinService = h.service;
    await raceOnOneNode(t, (bodies) => Promise.all(bodies.map((b) => service.join(b))));
  });

  it('across two instances (separate transactions ordered by the node lock)', async () => {
    const t = await createTestTenant(db());
    const pair = createJoinServicePair(h, { maxBatch: 8 });
    closers.push(pair.close);
    await raceOnOneNode(t, (bodies) => Promise.all(bodies.map((b, i) => pair.services[i % 2]!.join(b))));
  });
});

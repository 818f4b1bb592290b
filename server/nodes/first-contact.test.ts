import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRenewalLoop } from '../../agent/renew/loop';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { machineClaims, mintToken } from '../../test/join-harness';
import { createRenewHarness, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { adoptNode } from './lifecycle';

let r: RenewHarness;
beforeAll(async () => {
  r = await createRenewHarness();
});
afterAll(async () => {
  await r?.close();
});

const LIFECYCLE = ['node.joined', 'node.connected', 'node.acceptance.started', 'node.adopted'];

/** The node's lifecycle events in publication order (ids), with their data. */
async function lifecycleOf(t: TestTenant, nodeId: string) {
  const events = await testDb().event.findMany({ where: { tenantId: t.tenantId, type: { in: LIFECYCLE } }, orderBy: { id: 'asc' } });
  return events
    .filter((e) => (e.data as { nodeId?: string }).nodeId === nodeId)
    .map((e) => ({ type: e.type, data: e.data as Record<string, unknown> }));
}

const renewOnce = (dir: string) => runRenewalLoop({ identityDir: dir, ...r.target, once: true, log: () => {} });
const stateOf = async (nodeId: string) => (await testDb().node.findUniqueOrThrow({ where: { id: nodeId } })).state;

describe('first contact through the gateway', () => {
  it('a pool with acceptance checks: joined, connected, acceptance started at the first renewal, adopted by nodes.adopt', async () => {
    const t = await createTestTenant(testDb(), { pool: { acceptanceChecks: ['gpu-burn', 'nccl'] } });
    const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!);
    expect((await lifecycleOf(t, answer.nodeId)).map((e) => e.type)).toEqual(['node.joined']);

    expect(await renewOnce(dir)).toBe(0);
    const afterFirst = await lifecycleOf(t, answer.nodeId);
    expect(afterFirst.map((e) => e.type)).toEqual(['node.joined', 'node.connected', 'node.acceptance.started']);
    expect(afterFirst[1]!.data).toEqual({ nodeId: answer.nodeId, poolId: t.pool.id, siteId: t.site.id, identityGeneration: 1 });
    expect(afterFirst[2]!.data).toEqual({ nodeId: answer.nodeId, poolId: t.pool.id, checks: ['gpu-burn', 'nccl'], identityGeneration: 1 });
    // No check runner exists: the node waits for an operator.
    expect(await stateOf(answer.nodeId)).toBe('adopting');

    // A second renewal of the same identity generation is no new contact.
    expect(await renewOnce(dir)).toBe(0);
    expect((await lifecycleOf(t, answer.nodeId)).map((e) => e.type)).toEqual(['node.joined', 'node.connected', 'node.acceptance.started']);

    await adoptNode(testDb(), t.operator, { tenantId: t.tenantId, nodeId: answer.nodeId });
    expect(await stateOf(answer.nodeId)).toBe('adopted');
    expect((await lifecycleOf(t, answer.nodeId)).map((e) => e.type)).toEqual(LIFECYCLE);
  });

  it('a pool without checks: adopted at join, and the first renewal publishes node.connected only', async () => {
    const t = await createTestTenant(testDb());
    const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!);
    expect(await renewOnce(dir)).toBe(0);
    expect(await renewOnce(dir)).toBe(0);
    expect((await lifecycleOf(t, answer.nodeId)).map((e) => e.type)).toEqual(['node.joined', 'node.adopted', 'node.connected']);
    expect(await stateOf(answer.nodeId)).toBe('adopted');
  });

  it('a reclaim is a new identity generation: its first renewal is a new contact, and acceptance starts again', async () => {
    const t = await createTestTenant(testDb(), { pool: { acceptanceChecks: ['gpu-burn'] } });
    const claims = machineClaims();
    const first = await joinThroughGateway(r, (await mintToken(t)).token!, claims);
    expect(await renewOnce(first.dir)).toBe(0);
    await adoptNode(testDb(), t.operator, { tenantId: t.tenantId, nodeId: first.answer.nodeId });

    const again = await joinThroughGateway(r, (await mintToken(t, { allowReclaim: true })).token!, claims);
    expect(again.answer.nodeId).toBe(first.answer.nodeId);
    expect(await renewOnce(again.dir)).toBe(0);
    const connected = (await lifecycleOf(t, first.answer.nodeId)).filter((e) => e.type !== 'node.joined');
    expect(connected.map((e) => [e.type, e.data.identityGeneration ?? null])).toEqual([
      ['node.connected', 1],
      ['node.acceptance.started', 1],
      ['node.adopted', null],
      ['node.connected', 2],
      ['node.acceptance.started', 2],
    ]);
    expect(await stateOf(first.answer.nodeId)).toBe('adopting');
  });

  it('a refused renewal publishes nothing: the contact is recorded with the renewal or not at all', async () => {
    const t = await createTestTenant(testDb(), { pool: { acceptanceChecks: ['gpu-burn'] } });
    const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!);
    await testDb().nodeCert.updateMany({ where: { nodeId: answer.nodeId }, data: { revokedAt: new Date(), revocationReason: 'test' } });
    expect(await renewOnce(dir)).not.toBe(0);
    expect((await lifecycleOf(t, answer.nodeId)).map((e) => e.type)).toEqual(['node.joined']);
    expect((await testDb().node.findUniqueOrThrow({ where: { id: answer.nodeId } })).connectedGeneration).toBe(0);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { revokeJoinToken } from '../tokens/join-tokens';

// better_compute_refusal_events_suppressed_total counts the refusals whose event the shared rate limit dropped,
// and better_compute_joins_total counts every refusal, written or not.

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness({ limit: 1 });
});
afterAll(() => h.pool.end());

const value = async (name: string, labels: Record<string, string>) =>
  (await h.services.metrics.registry.getSingleMetric(name)!.get()).values.find((v) =>
    Object.entries(labels).every(([k, l]) => v.labels[k] === l),
  )?.value ?? 0;

describe('suppressed refusal events', () => {
  it('counts the refusals past the rate limit, by attestor and reason', async () => {
    const t = await createTestTenant(testDb());
    const created = await mintToken(t);
    await revokeJoinToken(testDb(), t.admin, { tenantId: t.tenantId, poolId: t.poolId, tokenId: created.id });
    const labels = { attestor: 'join-token', reason: 'join-token:revoked' };
    const suppressedBefore = await value('better_compute_refusal_events_suppressed_total', labels);
    const refusedBefore = await value('better_compute_joins_total', { ...labels, outcome: 'refused', role: 'node' });
    for (let i = 0; i < 3; i++) expect((await agentJoin(h, created.token!, machineClaims())).status).toBe(403);
    // A limit of one event per minute and reason: the first is written, the next two are suppressed.
    expect((await value('better_compute_refusal_events_suppressed_total', labels)) - suppressedBefore).toBe(2);
    expect((await value('better_compute_joins_total', { ...labels, outcome: 'refused', role: 'node' })) - refusedBefore).toBe(3);
    expect(await testDb().event.count({ where: { tenantId: t.tenantId, type: 'security.join.refused' } })).toBe(1);
  });
});

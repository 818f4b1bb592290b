import { beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { randomMac } from '../../test/discovery-harness';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../test/join-harness';
import { createCaller } from '../api/root';
import { createDiscoveryToken } from '../tokens/site-scoped';

describe('an approver', () => {
  let h: JoinHarness;
  beforeAll(async () => {
    h = await createJoinHarness();
  });

  it('approves and rejects join requests, and nothing else', { timeout: 60_000 }, async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const pending = async () => {
      const mac = randomMac();
      const token = (await createDiscoveryToken(db, t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 })).token!;
      const answer = await agentJoin(h, token, machineClaims({ macs: [mac] }), {
        role: 'discovery',
        attestor: 'discovery',
        keys: generateNodeKeyAndCsr(),
      });
      return (answer.answer as unknown as { requestId: string }).requestId;
    };
    const [first, second] = [await pending(), await pending()];
    const approver = createCaller({ db, principal: t.as('approver') });
    await expect(
      approver.joinRequests.approve({ tenantId: t.tenantId, poolId: t.poolId, requestId: first, reason: 'rack B7' }),
    ).resolves.toMatchObject({ id: first, state: 'approved' });
    await expect(
      approver.joinRequests.reject({ tenantId: t.tenantId, poolId: t.poolId, requestId: second, reason: 'unknown' }),
    ).resolves.toMatchObject({ id: second, state: 'rejected' });
    await expect(approver.joinRequests.list({ tenantId: t.tenantId, poolId: t.poolId, state: 'all' })).resolves.toMatchObject({
      items: expect.arrayContaining([expect.objectContaining({ id: first })]),
    });
    // A well-formed mutation of another kind is refused by the role, not by its input.
    const refused = await approver.joinTokens
      .create({ tenantId: t.tenantId, poolId: t.poolId, ttlSeconds: 600, idempotencyKey: 'approver-tries' })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('compute:join-tokens:create') });
    expect((refused as { cause?: { code?: string } }).cause?.code).toBe('ACCESS_DENIED');
  });
});

import { beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../test/join-harness';
import { randomMac } from '../../test/discovery-harness';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { archivePool, createPool } from '../pools/pools';
import { createSite } from '../sites/sites';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { approveJoinRequest, approveJoinRequests } from './decisions';
import { getJoinRequest } from './list';

// joinRequests.approve refuses (INVALID_STATE, naming why) an approval whose retry would certainly be
// refused by the join: the pool's policy.joinAttestors excludes the request's attestor, an archived pool,
// the request's token gone bad, or a token of another site than the pool's.

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;

async function pendingRequest(t: TestTenant) {
  const mac = randomMac();
  const created = await createDiscoveryToken(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 });
  const keys = generateNodeKeyAndCsr();
  const join = () =>
    agentJoin(h, created.token!, machineClaims({ macs: [mac] }), {
      role: 'discovery',
      attestor: 'discovery',
      expectedRole: 'ramdisk',
      keys,
    });
  const first = await join();
  const requestId = (first.answer as unknown as { requestId: string }).requestId;
  expect(requestId).toMatch(/^jreq_/);
  return { requestId, tokenId: created.id, join };
}

const poolWith = (t: TestTenant, joinAttestors: ('join-token' | 'discovery' | 'tpm')[]) =>
  createPool(db(), t.admin, {
    tenantId: t.tenantId,
    siteId: t.siteId,
    name: `only-${joinAttestors.join('-')}`,
    agent: 'bcd',
    policy: { joinAttestors },
  });

describe('approving into a pool that would refuse the machine', () => {
  it('refuses a pool whose policy.joinAttestors excludes discovery, naming the policy; the request stays pending and a pool that admits discovery takes it', async () => {
    const t = await createTestTenant(db());
    const r = await pendingRequest(t);
    const tokensOnly = await poolWith(t, ['join-token']);
    const refused = await failure(
      approveJoinRequest(db(), t.operator, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: tokensOnly.id, requestId: r.requestId }),
    );
    expect(refused).toMatchObject({ code: 'INVALID_STATE', field: 'poolId' });
    expect(refused.message).toContain('policy.joinAttestors');
    expect(refused.message).toContain('discovery');
    const many = await failure(
      approveJoinRequests(db(), t.operator, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: tokensOnly.id, requestIds: [r.requestId] }),
    );
    expect(many).toMatchObject({ code: 'INVALID_STATE', field: 'poolId' });
    expect((await getJoinRequest(db(), t.viewer, { tenantId: t.tenantId, poolId: t.poolId, requestId: r.requestId })).state).toBe(
      'pending',
    );
    expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'security.join-request.approved' } })).toBe(0);

    const withDiscovery = await poolWith(t, ['join-token', 'discovery']);
    expect(
      await approveJoinRequest(db(), t.operator, {
        ttlSeconds: 3600,
        tenantId: t.tenantId,
        poolId: withDiscovery.id,
        requestId: r.requestId,
      }),
    ).toMatchObject({ state: 'approved', poolId: withDiscovery.id });
    expect((await r.join()).answer!.status).toBe('joined');
  });

  it('approves nothing of a page when one request of it would be refused, and says how many', async () => {
    const t = await createTestTenant(db());
    const [a, b] = [await pendingRequest(t), await pendingRequest(t)];
    const tpmOnly = await poolWith(t, ['tpm']);
    const refused = await failure(
      approveJoinRequests(db(), t.operator, {
        ttlSeconds: 3600,
        tenantId: t.tenantId,
        poolId: tpmOnly.id,
        requestIds: [a.requestId, b.requestId],
      }),
    );
    expect(refused.code).toBe('INVALID_STATE');
    expect(refused.message).toContain('and 1 more');
    expect(await db().joinRequest.count({ where: { siteId: t.siteId, state: 'pending' } })).toBe(2);
  });

  it('refuses when the request token was revoked, has expired or is used up', async () => {
    const t = await createTestTenant(db());
    for (const spoil of [
      (id: string) => db().$executeRaw`UPDATE join_tokens SET revoked_at = compute_now() WHERE id = ${id}`,
      (id: string) => db().$executeRaw`UPDATE join_tokens SET expires_at = compute_now() - interval '1 second' WHERE id = ${id}`,
      (id: string) => db().$executeRaw`UPDATE join_tokens SET uses_left = 0 WHERE id = ${id}`,
    ]) {
      const r = await pendingRequest(t);
      await spoil(r.tokenId);
      const refused = await failure(
        approveJoinRequest(db(), t.operator, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: t.poolId, requestId: r.requestId }),
      );
      expect(refused).toMatchObject({ code: 'INVALID_STATE', field: 'requestId' });
      expect(refused.message).toMatch(/revoked|expired|used up/);
    }
  });

  it("refuses a request whose token belongs to another site than the pool's; a pool of another site does not see the request at all", async () => {
    const t = await createTestTenant(db());
    const r = await pendingRequest(t);
    const siteB = await createSite(db(), t.admin, { tenantId: t.tenantId, name: 'site-b' });
    const poolB = await createPool(db(), t.admin, { tenantId: t.tenantId, siteId: siteB.id, name: 'pool-b', agent: 'bcd' });
    expect(
      await failure(
        approveJoinRequest(db(), t.operator, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: poolB.id, requestId: r.requestId }),
      ),
    ).toMatchObject({ code: 'NOT_FOUND' });
    // A request refreshed by a token of site B (as rows keyed by the claims' hardware key could be): the
    // approved retry would present that token into a pool of site A, and the join refuses (join:site).
    const other = await createDiscoveryToken(db(), t.admin, { tenantId: t.tenantId, siteId: siteB.id, mac: randomMac(), ttlSeconds: 3600 });
    await db().joinRequest.update({ where: { id: r.requestId }, data: { tokenId: other.id } });
    const refused = await failure(
      approveJoinRequest(db(), t.operator, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: t.poolId, requestId: r.requestId }),
    );
    expect(refused).toMatchObject({ code: 'INVALID_STATE', field: 'poolId' });
    expect(refused.message).toContain(siteB.id);
  });

  it('still refuses an archived pool and still returns an approval made twice', async () => {
    const t = await createTestTenant(db());
    const r = await pendingRequest(t);
    const poolId = await t.newPool();
    await archivePool(db(), t.admin, { tenantId: t.tenantId, poolId });
    expect(
      await failure(approveJoinRequest(db(), t.operator, { ttlSeconds: 3600, tenantId: t.tenantId, poolId, requestId: r.requestId })),
    ).toMatchObject({
      code: 'INVALID_STATE',
    });
    const first = await approveJoinRequest(db(), t.operator, {
      ttlSeconds: 3600,
      tenantId: t.tenantId,
      poolId: t.poolId,
      requestId: r.requestId,
    });
    expect(
      await approveJoinRequest(db(), t.operator, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: t.poolId, requestId: r.requestId }),
    ).toEqual(first);
  });
});

import { beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { failure, type TestTenant } from '../../test/fixtures';
import { createJoinHarness, type JoinHarness } from '../../test/join-harness';
import { operatorNamed, pendingRequest, pxeJoin, pxeMachine, twoPersonTenant } from '../../test/two-person-harness';
import { authenticateApiKey } from '../api-keys/api-keys';
import { createCaller } from '../api/root';
import type { Principal } from '../authz/principal';
import { getJoinRequest } from './list';

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;
const as = (principal: Principal) => createCaller({ db: db(), principal });

/** Mints a real key as `creator` (apiKeys.create) and answers the principal that key authenticates as. */
async function mintKey(t: TestTenant, creator: Principal, role: 'admin' | 'approver', name: string): Promise<Principal> {
  const { key } = await as(creator).apiKeys.create({ tenantId: t.tenantId, role, name });
  const principal = await authenticateApiKey(db(), key);
  expect(principal).not.toBeNull();
  return principal!;
}

describe('two-person approval counts people, not identities', () => {
  it('refuses an admin who approves with a key, mints an approver key with it and approves again', async () => {
    const t = await twoPersonTenant();
    const admin = await operatorNamed(t, 'Ada', 'admin');
    const adminKey = await mintKey(t, admin, 'admin', 'ada automation');
    const m = await pxeMachine(t);
    const requestId = await pendingRequest(h, m);
    const ref = { tenantId: t.tenantId, poolId: t.poolId, requestId };

    const first = await as(adminKey).joinRequests.approve(ref);
    expect(first).toMatchObject({ state: 'pending', firstApproval: { by: adminKey.actor } });
    // The key mints a key for itself and approves again: still Ada, still 1 of 2.
    const mintedKey = await mintKey(t, adminKey, 'approver', 'second pair of hands');
    const again = await as(mintedKey).joinRequests.approve(ref);
    expect(again).toMatchObject({ state: 'pending', decidedBy: null, firstApproval: { by: adminKey.actor } });
    const many = await as(mintedKey).joinRequests.approveMany({ tenantId: t.tenantId, poolId: t.poolId, requestIds: [requestId] });
    expect(many.approved).toEqual([]);
    expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'security.join-request.approved' } })).toBe(0);
    // Ada's own session is Ada too.
    await expect(as(admin).joinRequests.approve(ref)).resolves.toMatchObject({ state: 'pending' });
    expect((await pxeJoin(h, m)).answer).toMatchObject({ status: 'pending', requestId });

    // Another person admits it.
    const bob = await operatorNamed(t, 'Bob');
    await expect(as(bob).joinRequests.approve(ref)).resolves.toMatchObject({ state: 'approved', decidedBy: bob.actor });
    expect((await pxeJoin(h, m)).answer).toMatchObject({ status: 'joined' });
  });

  it("refuses a session and the same person's key in either order, and a filter never offers them", async () => {
    const t = await twoPersonTenant();
    const ada = await operatorNamed(t, 'Ada', 'admin');
    const adasKey = await mintKey(t, ada, 'approver', 'ada cli');
    const [a, b] = [await pendingRequest(h, await pxeMachine(t)), await pendingRequest(h, await pxeMachine(t))];
    const ref = (requestId: string) => ({ tenantId: t.tenantId, poolId: t.poolId, requestId });

    await as(ada).joinRequests.approve(ref(a));
    await expect(as(adasKey).joinRequests.approve(ref(a))).resolves.toMatchObject({ state: 'pending', firstApproval: { by: ada.actor } });
    await as(adasKey).joinRequests.approve(ref(b));
    await expect(as(ada).joinRequests.approve(ref(b))).resolves.toMatchObject({ state: 'pending', firstApproval: { by: adasKey.actor } });

    const { asOf } = await as(t.viewer).joinRequests.list({ tenantId: t.tenantId, poolId: t.poolId });
    const byFilter = await as(adasKey).joinRequests.approveMany({
      tenantId: t.tenantId,
      poolId: t.poolId,
      matching: { createdUpTo: asOf },
    });
    expect(byFilter).toMatchObject({ approved: [], recorded: [], remaining: 0 });
    for (const id of [a, b]) expect((await getJoinRequest(db(), t.viewer, ref(id))).state).toBe('pending');

    // Bob's key is Bob: it admits both.
    const bob = await operatorNamed(t, 'Bob', 'admin');
    const bobsKey = await mintKey(t, bob, 'approver', 'bob cli');
    const admitted = await as(bobsKey).joinRequests.approveMany({
      tenantId: t.tenantId,
      poolId: t.poolId,
      matching: { createdUpTo: asOf },
    });
    expect(admitted.approved.map((r) => r.id).sort()).toEqual([a, b].sort());
  });

  it('refuses lowering requiredApprovals while requests wait under two-person approval', async () => {
    const t = await twoPersonTenant();
    const ada = await operatorNamed(t, 'Ada', 'admin');
    const requestId = await pendingRequest(h, await pxeMachine(t));
    await as(ada).joinRequests.approve({ tenantId: t.tenantId, poolId: t.poolId, requestId });

    const refused = await failure(as(ada).sites.update({ tenantId: t.tenantId, siteId: t.siteId, requiredApprovals: 1 }));
    expect(refused).toMatchObject({ code: 'INVALID_STATE', field: 'requiredApprovals' });
    expect(refused.message).toContain('1 join request');
    expect((await as(ada).sites.get({ tenantId: t.tenantId, siteId: t.siteId })).requiredApprovals).toBe(2);
    // Other settings still change, and keeping 2 is no lowering.
    await expect(
      as(ada).sites.update({ tenantId: t.tenantId, siteId: t.siteId, requiredApprovals: 2, discovery: { pendingTtlSeconds: 600 } }),
    ).resolves.toMatchObject({ requiredApprovals: 2 });

    // Once nothing waits (rejected here), the site may go back to one approval.
    await as(ada).joinRequests.reject({ tenantId: t.tenantId, poolId: t.poolId, requestId, reason: 'unknown machine' });
    await expect(as(ada).sites.update({ tenantId: t.tenantId, siteId: t.siteId, requiredApprovals: 1 })).resolves.toMatchObject({
      requiredApprovals: 1,
    });
  });
});

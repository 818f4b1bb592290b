import { beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { createJoinHarness, type JoinHarness } from '../../test/join-harness';
import { operatorNamed, pendingRequest, pxeJoin, pxeMachine, twoPersonTenant, type PxeMachine } from '../../test/two-person-harness';
import { createCaller } from '../api/root';
import { principalOf } from '../authz/principal';
import { newId } from '../ids';
import { approveJoinRequest, approveJoinRequests, rejectJoinRequest } from './decisions';
import { getJoinRequest, listJoinRequests } from './list';

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;

const join = (m: PxeMachine, keys?: NodeKeyAndCsr) => pxeJoin(h, m, keys);
const pending = (m: PxeMachine) => pendingRequest(h, m);
const count = (t: TestTenant, type: string) => db().event.count({ where: { tenantId: t.tenantId, type } });

describe('two-person approval (a site with requiredApprovals 2)', () => {
  it('records the first approval (1 of 2, who and when), refuses the same principal and another pool, and admits on a second principal', async () => {
    const t = await twoPersonTenant();
    const ada = await operatorNamed(t, 'Ada');
    const bob = await operatorNamed(t, 'Bob');
    const m = await pxeMachine(t);
    const requestId = await pending(m);
    const ref = { tenantId: t.tenantId, poolId: t.poolId, requestId };

    const first = await createCaller({ db: db(), principal: ada }).joinRequests.approve({ ...ref, reason: 'rack B7' });
    expect(first).toMatchObject({
      state: 'pending',
      requiredApprovals: 2,
      decidedBy: null,
      firstApproval: { by: ada.actor, byName: 'Ada', poolId: t.poolId, at: expect.any(String) },
    });
    expect(await count(t, 'node.join-request.approval-recorded')).toBe(1);
    expect(await db().event.findFirst({ where: { tenantId: t.tenantId, type: 'node.join-request.approval-recorded' } })).toMatchObject({
      data: {
        requestId,
        approvedBy: ada.actor,
        approvals: 1,
        requiredApprovals: 2,
        poolId: t.poolId,
        siteId: t.siteId,
        attestor: 'discovery',
      },
    });
    expect(
      await db().auditEntry.count({ where: { tenantId: t.tenantId, action: 'join-request.approval-recorded', actor: ada.actor } }),
    ).toBe(1);
    // Nothing admitted yet: the retry still waits.
    expect((await join(m)).answer).toMatchObject({ status: 'pending', requestId });

    // The same principal again: still 1 of 2, nothing new published.
    await expect(approveJoinRequest(db(), ada, { ...ref, ttlSeconds: 3600 })).resolves.toMatchObject({
      state: 'pending',
      firstApproval: { by: ada.actor },
    });
    expect(await count(t, 'node.join-request.approval-recorded')).toBe(1);
    expect(await count(t, 'security.join-request.approved')).toBe(0);

    // A second approval into another pool is refused, naming why.
    const otherPool = await t.newPool();
    const refused = await failure(createCaller({ db: db(), principal: bob }).joinRequests.approve({ ...ref, poolId: otherPool }));
    expect(refused).toMatchObject({ code: 'INVALID_STATE', field: 'poolId' });
    expect(refused.message).toContain(`Ada approved it into pool ${t.poolId}`);

    // The listing shows 1 of 2 with the first approver's name.
    const { items } = await listJoinRequests(db(), t.viewer, { state: 'pending', tenantId: t.tenantId, poolId: t.poolId });
    expect(items.find((r) => r.id === requestId)).toMatchObject({
      state: 'pending',
      requiredApprovals: 2,
      firstApproval: { byName: 'Ada' },
    });

    const second = await createCaller({ db: db(), principal: bob }).joinRequests.approve({ ...ref, ttlSeconds: 900 });
    expect(second).toMatchObject({
      state: 'approved',
      decidedBy: bob.actor,
      decidedByName: 'Bob',
      poolId: t.poolId,
      firstApproval: { by: ada.actor, byName: 'Ada' },
    });
    expect(await db().event.findFirst({ where: { tenantId: t.tenantId, type: 'security.join-request.approved' } })).toMatchObject({
      data: expect.objectContaining({ requestId, decidedBy: bob.actor, firstApprovedBy: ada.actor }),
    });
    expect(await db().auditEntry.findFirst({ where: { tenantId: t.tenantId, action: 'join-request.approved' } })).toMatchObject({
      actor: bob.actor,
      data: expect.objectContaining({ firstApprovedBy: ada.actor }),
    });
    // Events and audit name both approvers by name, never by id alone.
    const viewer = createCaller({ db: db(), principal: t.admin });
    const events = (await viewer.events.list({ tenantId: t.tenantId })).items;
    expect(events.find((e) => e.type === 'node.join-request.approval-recorded')?.actorNames).toEqual({ [ada.actor]: 'Ada' });
    expect(events.find((e) => e.type === 'security.join-request.approved')?.actorNames).toEqual({ [ada.actor]: 'Ada', [bob.actor]: 'Bob' });
    const audit = (await viewer.audit.list({ tenantId: t.tenantId, action: 'join-request.approved' })).items;
    expect(audit[0]).toMatchObject({ actorName: 'Bob', actorNames: { [ada.actor]: 'Ada' } });
    const admitted = await join(m);
    expect(admitted.answer).toMatchObject({ status: 'joined', role: 'ramdisk' });
    expect(await getJoinRequest(db(), t.viewer, ref)).toMatchObject({ state: 'consumed' });
  });

  it('lets an API key be one of the two principals, and rejects at once whoever rejects', async () => {
    const t = await twoPersonTenant();
    const ada = await operatorNamed(t, 'Ada');
    const key = principalOf('api-key', newId('ak'), [[t.tenantId, 'approver']]);
    const [a, b] = [await pxeMachine(t), await pxeMachine(t)];
    const [ra, rb] = [await pending(a), await pending(b)];
    await approveJoinRequest(db(), ada, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: t.poolId, requestId: ra });
    await expect(
      approveJoinRequest(db(), key, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: t.poolId, requestId: ra }),
    ).resolves.toMatchObject({
      state: 'approved',
      decidedBy: key.actor,
      firstApproval: { by: ada.actor },
    });
    // A first approval does not hold off a rejection, by anyone, even the first approver.
    await approveJoinRequest(db(), key, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: t.poolId, requestId: rb });
    await expect(
      rejectJoinRequest(db(), key, { tenantId: t.tenantId, poolId: t.poolId, requestId: rb, reason: 'wrong rack' }),
    ).resolves.toMatchObject({ state: 'rejected' });
    expect((await join(b)).status).toBe(403);
  });

  it('is race-safe: two principals at once admit once; the same principal twice at once stays 1 of 2', async () => {
    const t = await twoPersonTenant();
    const [ada, bob] = [await operatorNamed(t, 'Ada'), await operatorNamed(t, 'Bob')];
    for (let round = 0; round < 5; round++) {
      const requestId = await pending(await pxeMachine(t));
      const ref = { tenantId: t.tenantId, poolId: t.poolId, requestId };
      const answers = await Promise.all([
        approveJoinRequest(db(), ada, { ...ref, ttlSeconds: 3600 }),
        approveJoinRequest(db(), bob, { ...ref, ttlSeconds: 3600 }),
      ]);
      // One recorded the first approval, the other's admitted (in either order).
      expect(answers.map((a) => a.state).sort()).toEqual(['approved', 'pending']);
      expect((await getJoinRequest(db(), t.viewer, ref)).state).toBe('approved');
    }
    expect(await count(t, 'security.join-request.approved')).toBe(5);
    expect(await count(t, 'node.join-request.approval-recorded')).toBe(5);

    const requestId = await pending(await pxeMachine(t));
    const ref = { tenantId: t.tenantId, poolId: t.poolId, requestId };
    const same = await Promise.all([
      approveJoinRequest(db(), ada, { ...ref, ttlSeconds: 3600 }),
      approveJoinRequest(db(), ada, { ...ref, ttlSeconds: 3600 }),
      approveJoinRequest(db(), ada, { ...ref, ttlSeconds: 3600 }),
    ]);
    expect(same.map((a) => a.state)).toEqual(['pending', 'pending', 'pending']);
    expect(await count(t, 'node.join-request.approval-recorded')).toBe(6);
    expect(await count(t, 'security.join-request.approved')).toBe(5);
  });

  it('approveMany honours it by ids and by filter, and a filter never takes again what the caller approved', async () => {
    const t = await twoPersonTenant();
    const [ada, bob] = [await operatorNamed(t, 'Ada'), await operatorNamed(t, 'Bob')];
    const ids = [await pending(await pxeMachine(t)), await pending(await pxeMachine(t))];
    const byIds = await createCaller({ db: db(), principal: ada }).joinRequests.approveMany({
      tenantId: t.tenantId,
      poolId: t.poolId,
      requestIds: ids,
    });
    expect(byIds).toMatchObject({ approved: [], skipped: [] });
    expect(byIds.recorded.map((r) => r.id).sort()).toEqual([...ids].sort());

    const third = await pending(await pxeMachine(t));
    const { asOf } = await listJoinRequests(db(), t.viewer, { state: 'pending', tenantId: t.tenantId, poolId: t.poolId });
    const matching = { createdUpTo: asOf };
    // Ada by filter: only the third is hers to approve; then nothing is left for her.
    const adaPage = await approveJoinRequests(db(), ada, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: t.poolId, matching });
    expect(adaPage).toMatchObject({ approved: [], remaining: 0 });
    expect(adaPage.recorded.map((r) => r.id)).toEqual([third]);
    await expect(
      approveJoinRequests(db(), ada, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: t.poolId, matching }),
    ).resolves.toMatchObject({
      approved: [],
      recorded: [],
      remaining: 0,
    });
    // Bob by filter admits all three.
    const bobPage = await createCaller({ db: db(), principal: bob }).joinRequests.approveMany({
      tenantId: t.tenantId,
      poolId: t.poolId,
      matching,
    });
    expect(bobPage.approved.map((r) => r.id).sort()).toEqual([...ids, third].sort());
    expect(bobPage.remaining).toBe(0);

    // By ids into another pool than the first approval: the whole call is refused, nothing decided.
    const fourth = await pending(await pxeMachine(t));
    await approveJoinRequest(db(), ada, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: t.poolId, requestId: fourth });
    const fifth = await pending(await pxeMachine(t));
    const otherPool = await t.newPool();
    const refused = await failure(
      approveJoinRequests(db(), bob, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: otherPool, requestIds: [fifth, fourth] }),
    );
    expect(refused).toMatchObject({ code: 'INVALID_STATE', field: 'poolId' });
    expect((await getJoinRequest(db(), t.viewer, { tenantId: t.tenantId, poolId: t.poolId, requestId: fifth })).firstApproval).toBeNull();
  });

  it('drops a recorded first approval when the machine asks again with a new CSR', async () => {
    const t = await twoPersonTenant();
    const [ada, bob] = [await operatorNamed(t, 'Ada'), await operatorNamed(t, 'Bob')];
    const m = await pxeMachine(t);
    const requestId = await pending(m);
    const ref = { tenantId: t.tenantId, poolId: t.poolId, requestId };
    await approveJoinRequest(db(), ada, { ...ref, ttlSeconds: 3600 });
    // The same CSR keeps it; a new one (another key) drops it: Ada approved what the old request showed.
    await join(m);
    expect((await getJoinRequest(db(), t.viewer, ref)).firstApproval).toMatchObject({ by: ada.actor });
    const renewed = { ...m, keys: generateNodeKeyAndCsr() };
    expect(await pending(renewed)).toBe(requestId);
    expect((await getJoinRequest(db(), t.viewer, ref)).firstApproval).toBeNull();
    await expect(approveJoinRequest(db(), bob, { ...ref, ttlSeconds: 3600 })).resolves.toMatchObject({
      state: 'pending',
      firstApproval: { by: bob.actor },
    });
  });

  it('leaves one-approval sites as they were: the first approval admits', async () => {
    const t = await createTestTenant(db());
    const requestId = await pending(await pxeMachine(t));
    await expect(
      approveJoinRequest(db(), t.operator, { ttlSeconds: 3600, tenantId: t.tenantId, poolId: t.poolId, requestId }),
    ).resolves.toMatchObject({
      state: 'approved',
      requiredApprovals: 1,
      firstApproval: null,
    });
    expect(await count(t, 'node.join-request.approval-recorded')).toBe(0);
  });
});

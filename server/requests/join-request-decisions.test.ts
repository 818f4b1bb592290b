import { describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { randomMac } from '../../test/discovery-harness';
import { archivePool } from '../pools/pools';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { approveJoinRequest, rejectJoinRequest } from './decisions';
import { pxeMachine, pxeQueue, ref, refusals } from '../../test/pxe-queue';
import { getJoinRequest, listJoinRequests } from './list';

const db = testDb;
const { join, pendingOf } = pxeQueue();

describe('decisions', () => {
  it('reject is final: the retry is refused and approve after reject is INVALID_STATE; reject twice returns the rejection', async () => {
    const t = await createTestTenant(db());
    const m = await pxeMachine(t);
    const id = await pendingOf(m);
    const rejected = await rejectJoinRequest(db(), t.operator, { ...ref(t, id), reason: 'unknown serial' });
    expect(rejected).toMatchObject({ state: 'rejected', reason: 'unknown serial', decidedBy: t.operator.actor });
    expect((await rejectJoinRequest(db(), t.operator, { ...ref(t, id), reason: 'unknown serial' })).state).toBe('rejected');
    expect(await failure(approveJoinRequest(db(), t.operator, { ...ref(t, id), ttlSeconds: 3600 }))).toMatchObject({
      code: 'INVALID_STATE',
    });
    expect((await join(m)).status).toBe(403);
    // Another CSR with the same token is refused too: the rejection holds the token.
    expect((await join(m, generateNodeKeyAndCsr())).status).toBe(403);
    expect((await refusals(t)).map((e) => (e.data as { reason: string }).reason)).toEqual(['discovery:rejected', 'discovery:rejected']);
    expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'security.join-request.rejected' } })).toBe(1);
  });

  it('reject withdraws an approval not used yet; approving twice returns the approval', async () => {
    const t = await createTestTenant(db());
    const m = await pxeMachine(t);
    const id = await pendingOf(m);
    const first = await approveJoinRequest(db(), t.operator, { ...ref(t, id), ttlSeconds: 3600 });
    const second = await approveJoinRequest(db(), t.operator, { ...ref(t, id), ttlSeconds: 3600 });
    expect(second).toEqual(first);
    await rejectJoinRequest(db(), t.operator, { ...ref(t, id), reason: 'withdrawn' });
    expect((await join(m)).status).toBe(403);
    expect(await db().node.count({ where: { siteId: t.siteId } })).toBe(0);
  });

  it('refuses to approve into an archived pool (INVALID_STATE)', async () => {
    const t = await createTestTenant(db());
    const m = await pxeMachine(t);
    const id = await pendingOf(m);
    const poolId = await t.newPool();
    await archivePool(db(), t.admin, { tenantId: t.tenantId, poolId });
    expect(
      await failure(approveJoinRequest(db(), t.operator, { ttlSeconds: 3600, tenantId: t.tenantId, poolId, requestId: id })),
    ).toMatchObject({
      code: 'INVALID_STATE',
    });
  });

  it('reads pending and approved requests past their expiry as expired at the database clock, and refuses their CSR', async () => {
    const t = await createTestTenant(db());
    const a = await pxeMachine(t);
    const b = await pxeMachine(t);
    const pending = await pendingOf(a);
    const approved = await pendingOf(b);
    await approveJoinRequest(db(), t.operator, { ...ref(t, approved), ttlSeconds: 60 });
    await db()
      .$executeRaw`UPDATE join_requests SET expires_at = compute_now() - interval '1 millisecond' WHERE id IN (${pending}, ${approved})`;
    expect((await getJoinRequest(db(), t.viewer, ref(t, pending))).state).toBe('expired');
    expect((await getJoinRequest(db(), t.viewer, ref(t, approved))).state).toBe('expired');
    const expired = await listJoinRequests(db(), t.viewer, { tenantId: t.tenantId, poolId: t.poolId, state: 'expired' });
    expect(expired.items.map((r) => r.id).sort()).toEqual([pending, approved].sort());
    expect((await listJoinRequests(db(), t.viewer, { state: 'pending', tenantId: t.tenantId, poolId: t.poolId })).items).toEqual([]);
    expect(await failure(approveJoinRequest(db(), t.operator, { ...ref(t, pending), ttlSeconds: 3600 }))).toMatchObject({
      code: 'INVALID_STATE',
    });
    expect((await join(a)).status).toBe(403);
    expect((await join(b)).status).toBe(403);
    expect((await refusals(t)).map((e) => (e.data as { reason: string }).reason)).toEqual([
      'discovery:request-expired',
      'discovery:request-expired',
    ]);
    // A new attempt (another CSR) after expiry is a new request; the old one stays expired.
    const renewed = await join(a, generateNodeKeyAndCsr());
    const renewedId = (renewed.answer as unknown as { requestId: string }).requestId;
    expect(renewedId).not.toBe(pending);
    expect((await getJoinRequest(db(), t.viewer, ref(t, pending))).state).toBe('expired');
    expect((await getJoinRequest(db(), t.viewer, ref(t, renewedId))).state).toBe('pending');
  });

  it('lets a rejected machine ask again only with a new discovery token (a new boot lease)', async () => {
    const t = await createTestTenant(db());
    const m = await pxeMachine(t);
    const id = await pendingOf(m);
    await rejectJoinRequest(db(), t.operator, { ...ref(t, id), reason: 'unknown serial' });
    const reboot = await createDiscoveryToken(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac: m.mac, ttlSeconds: 3600 });
    const again = await join({ ...m, token: reboot.token!, tokenId: reboot.id }, generateNodeKeyAndCsr());
    expect(again.answer!.status).toBe('pending');
    expect((again.answer as unknown as { requestId: string }).requestId).not.toBe(id);
  });
});

describe('races', () => {
  it('20 concurrent approvals decide once; 20 concurrent retries produce one certificate and one consumed request', async () => {
    const t = await createTestTenant(db());
    const m = await pxeMachine(t);
    const id = await pendingOf(m);
    const decisions = await Promise.all(
      Array.from({ length: 20 }, () => approveJoinRequest(db(), t.operator, { ...ref(t, id), ttlSeconds: 3600 })),
    );
    expect(new Set(decisions.map((d) => d.decidedAt)).size).toBe(1);
    expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'security.join-request.approved' } })).toBe(1);

    const retries = await Promise.all(Array.from({ length: 20 }, () => join(m)));
    expect(retries.filter((r) => r.status === 200)).toHaveLength(1);
    expect(retries.filter((r) => r.status !== 200).every((r) => r.status === 403 || r.status === 409)).toBe(true);
    const certs = await db().nodeCert.count({ where: { node: { siteId: t.siteId } } });
    expect(certs).toBe(1);
    expect(await db().joinRequest.count({ where: { siteId: t.siteId, state: 'consumed' } })).toBe(1);
  });
});

describe('authorization', () => {
  it('gives another tenant NOT_FOUND for every call and a viewer ACCESS_DENIED for decisions', async () => {
    const t = await createTestTenant(db());
    const m = await pxeMachine(t);
    const id = await pendingOf(m);
    const other = await createTestTenant(db());
    const theirs = { tenantId: other.tenantId, poolId: t.poolId, requestId: id };
    const mine = ref(t, id);
    for (const [principal, input] of [
      [other.admin, theirs],
      [other.admin, mine],
    ] as const) {
      expect(
        await failure(listJoinRequests(db(), principal, { state: 'pending', tenantId: input.tenantId, poolId: input.poolId })),
      ).toMatchObject({
        code: 'NOT_FOUND',
      });
      expect(await failure(getJoinRequest(db(), principal, input))).toMatchObject({ code: 'NOT_FOUND' });
      expect(await failure(approveJoinRequest(db(), principal, { ...input, ttlSeconds: 3600 }))).toMatchObject({ code: 'NOT_FOUND' });
      expect(await failure(rejectJoinRequest(db(), principal, { ...input, reason: 'not ours' }))).toMatchObject({ code: 'NOT_FOUND' });
    }
    // Another tenant's own pool does not show this site's requests.
    expect((await listJoinRequests(db(), other.admin, { tenantId: other.tenantId, poolId: other.poolId, state: 'all' })).items).toEqual([]);
    expect(
      await failure(getJoinRequest(db(), other.admin, { tenantId: other.tenantId, poolId: other.poolId, requestId: id })),
    ).toMatchObject({ code: 'NOT_FOUND' });
    expect(await failure(approveJoinRequest(db(), t.viewer, { ...mine, ttlSeconds: 3600 }))).toMatchObject({ code: 'ACCESS_DENIED' });
    expect(await failure(rejectJoinRequest(db(), t.viewer, { ...mine, reason: 'not ours' }))).toMatchObject({ code: 'ACCESS_DENIED' });
    expect(
      await failure(createDiscoveryToken(db(), t.operator, { tenantId: t.tenantId, siteId: t.siteId, mac: randomMac(), ttlSeconds: 3600 })),
    ).toMatchObject({ code: 'ACCESS_DENIED' });
    expect((await getJoinRequest(db(), t.viewer, mine)).state).toBe('pending');
  });
});

import { beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../test/join-harness';
import { mintDiscoveryToken, randomMac } from '../../test/discovery-harness';
import type { HardwareClaims } from '../../protocol/hardware-claims';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { approveJoinRequests, rejectJoinRequests } from './decisions';
import { listJoinRequests } from './list';
import { createCaller } from '../api/root';

// The queue at fleet scale: a search and filters decided in SQL with the total they match, and bulk
// decisions by filter, a page of 200 per call, until nothing that matched the confirmed count is left.

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;

async function pxe(t: TestTenant, claims: Partial<HardwareClaims>, options: { boot?: boolean } = {}) {
  const mac = randomMac();
  const token = options.boot
    ? (await mintDiscoveryToken(t, mac)).token
    : (await createDiscoveryToken(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 })).token!;
  const keys = generateNodeKeyAndCsr();
  const join = () =>
    agentJoin(h, token, machineClaims({ macs: [mac], ...claims }), {
      role: 'discovery',
      attestor: 'discovery',
      expectedRole: 'ramdisk',
      keys,
    });
  const answer = (await join()).answer as unknown as { status: string; requestId: string };
  expect(answer.status).toBe('pending');
  return { mac, requestId: answer.requestId, join };
}

/** `count` pending requests straight into the table (no token, so any pool's approval admits them). */
async function bulkInsert(t: TestTenant, count: number, hostname: string) {
  await db().$executeRaw`
    INSERT INTO join_requests (id, tenant_id, site_id, attestor, state, machine_key, claims, csr_sha256, expires_at, created_at)
    SELECT 'jreq_' || ${hostname.replace(/[^a-z0-9]/g, '')} || g || substr(md5(${t.siteId}), 1, 8), ${t.tenantId}, ${t.siteId}, 'discovery', 'pending',
           'bulk:' || ${t.siteId} || ':' || ${hostname} || g, jsonb_build_object('hostname', ${hostname} || '-' || g), 'x',
           now() + interval '1 day', now() - interval '1 minute' - g * interval '1 millisecond'
      FROM generate_series(1, ${count}) AS g`;
}

describe('searching and filtering the queue', () => {
  it('finds a request by MAC in any notation, serial, product UUID, hostname, IP or id, filters by attestor, vouchedBy, trust and age, and counts every match', async () => {
    const t = await createTestTenant(db());
    const ref = { tenantId: t.tenantId, poolId: t.poolId };
    const a = await pxe(t, { hostname: 'gpu-a17', productSerial: 'SN-ALPHA-1', productUuid: '4c4c4544-0031-4d10-8051-b7c04f443432' });
    const b = await pxe(t, { hostname: 'gpu-b02', productSerial: 'SN-BRAVO-2' }, { boot: true });
    const weak = await pxe(t, { hostname: 'weak-01', productSerial: undefined, productUuid: undefined });
    const ids = async (input: Record<string, unknown>) =>
      (await listJoinRequests(db(), t.viewer, { state: 'pending', ...ref, ...input })).items.map((r) => r.id).sort();

    const all = await listJoinRequests(db(), t.viewer, { state: 'pending', ...ref, limit: 1 });
    expect(all.items).toHaveLength(1);
    expect(all.total).toBe(3);
    expect(Date.parse(all.asOf)).toBeGreaterThan(Date.now() - 60_000);

    expect(await ids({ search: a.mac.toUpperCase() })).toEqual([a.requestId]);
    expect(await ids({ search: a.mac.replaceAll(':', '-') })).toEqual([a.requestId]);
    expect(await ids({ search: a.mac.replaceAll(':', '').slice(4) })).toEqual([a.requestId]);
    expect(await ids({ search: 'sn-bravo' })).toEqual([b.requestId]);
    expect(await ids({ search: '4C4C4544-0031' })).toEqual([a.requestId]);
    expect(await ids({ search: 'gpu-' })).toEqual([a.requestId, b.requestId].sort());
    expect(await ids({ search: b.requestId })).toEqual([b.requestId]);
    expect(await ids({ search: '10.0.0.7' })).toEqual([b.requestId]);
    expect(await ids({ search: '%' })).toEqual([]);
    expect(await ids({ vouchedBy: 'module:boot' })).toEqual([b.requestId]);
    expect(await ids({ attestor: 'tpm' })).toEqual([]);
    expect(await ids({ attestor: 'discovery', trustedKey: false })).toEqual([weak.requestId]);
    expect(await ids({ trustedKey: true })).toEqual([a.requestId, b.requestId].sort());
    const page = await listJoinRequests(db(), t.viewer, { state: 'pending', ...ref, trustedKey: true, search: 'gpu', limit: 1 });
    expect(page).toMatchObject({ total: 2, nextCursor: page.items[0]!.id });
    const next = await listJoinRequests(db(), t.viewer, {
      state: 'pending',
      ...ref,
      trustedKey: true,
      search: 'gpu',
      limit: 1,
      cursor: page.nextCursor!,
    });
    expect(next.items.map((r) => r.id)).not.toContain(page.items[0]!.id);
    expect(next).toMatchObject({ total: 2, nextCursor: null });

    await db().joinRequest.update({ where: { id: a.requestId }, data: { createdAt: new Date(Date.now() - 7_200_000) } });
    expect(await ids({ minAgeSeconds: 3_600 })).toEqual([a.requestId]);
    expect(await ids({ maxAgeSeconds: 3_600 })).toEqual([b.requestId, weak.requestId].sort());
  });

  it('refuses a filter it cannot read, naming the field', async () => {
    const t = await createTestTenant(db());
    // Input is parsed by the adapter (docs/architecture.md): the procedures refuse, the domain functions trust.
    const viewer = createCaller({ db: db(), principal: t.viewer });
    const operator = createCaller({ db: db(), principal: t.operator });
    const refused = await failure(viewer.joinRequests.list({ tenantId: t.tenantId, poolId: t.poolId, search: 'a\u0007b' }));
    expect(refused).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'search' });
    const both = await failure(
      operator.joinRequests.approveMany({
        tenantId: t.tenantId,
        poolId: t.poolId,
        requestIds: ['jreq_x'],
        matching: { createdUpTo: new Date().toISOString() },
      }),
    );
    expect(both).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await failure(operator.joinRequests.rejectMany({ tenantId: t.tenantId, poolId: t.poolId, reason: 'not ours' }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    // A rejection is final, so it carries a reason: absent or blank is refused, one request or many.
    const unreasoned = { tenantId: t.tenantId, poolId: t.poolId, requestId: 'jreq_x' } as {
      tenantId: string;
      poolId: string;
      requestId: string;
      reason: string;
    };
    for (const reason of [undefined, '', '   ']) {
      const one = await failure(operator.joinRequests.reject({ ...unreasoned, ...(reason === undefined ? {} : { reason }) }));
      expect(one).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'reason' });
      expect(one.message).toMatch(/reason is required/);
      const many = { tenantId: t.tenantId, poolId: t.poolId, requestIds: ['jreq_x'] } as {
        tenantId: string;
        poolId: string;
        requestIds: string[];
        reason: string;
      };
      const refusedMany = await failure(operator.joinRequests.rejectMany({ ...many, ...(reason === undefined ? {} : { reason }) }));
      expect(refusedMany).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'reason' });
    }
    expect(
      await failure(operator.joinRequests.approve({ tenantId: t.tenantId, poolId: t.poolId, requestId: 'jreq_x', ttlSeconds: 59 })),
    ).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'ttlSeconds' });
  });

  it('applies the defaults in the procedure: pending requests, a page of 100, an approval of one hour', async () => {
    const t = await createTestTenant(db());
    const a = await pxe(t, { hostname: 'dflt-a' });
    const viewer = createCaller({ db: db(), principal: t.viewer });
    const operator = createCaller({ db: db(), principal: t.operator });
    const ref = { tenantId: t.tenantId, poolId: t.poolId };
    expect((await viewer.joinRequests.list({ ...ref, search: '  DFLT-A  ' })).items.map((r) => r.id)).toEqual([a.requestId]);
    const approved = await operator.joinRequests.approve({ ...ref, requestId: a.requestId });
    const lifetime = Date.parse(approved.expiresAt) - Date.parse(approved.decidedAt!);
    expect(lifetime).toBeGreaterThan(3_590_000);
    expect(lifetime).toBeLessThanOrEqual(3_600_000);
    expect((await viewer.joinRequests.list(ref)).items).toEqual([]);
    expect((await viewer.joinRequests.list({ ...ref, state: 'approved' })).items.map((r) => r.id)).toEqual([a.requestId]);
  });
});

describe('deciding every request that matches', () => {
  it('approves 450 matching requests in pages of 200, leaves the others and a later arrival pending, and rejects another filter', async () => {
    const t = await createTestTenant(db());
    const ref = { tenantId: t.tenantId, poolId: t.poolId };
    await bulkInsert(t, 450, 'rack-b7');
    await bulkInsert(t, 30, 'rack-c1');
    const listed = await listJoinRequests(db(), t.viewer, { state: 'pending', ...ref, search: 'rack-b7', limit: 50 });
    expect(listed.total).toBe(450);
    const late = await pxe(t, { hostname: 'rack-b7-late' });

    const pages: { approved: number; remaining: number }[] = [];
    for (;;) {
      const answer = await approveJoinRequests(db(), t.operator, {
        ...ref,
        ttlSeconds: 900,
        reason: 'rack B7 intake',
        matching: { search: 'rack-b7', createdUpTo: listed.asOf },
      });
      pages.push({ approved: answer.approved.length, remaining: answer.remaining });
      if (!answer.remaining || !answer.approved.length) break;
    }
    expect(pages).toEqual([
      { approved: 200, remaining: 250 },
      { approved: 200, remaining: 50 },
      { approved: 50, remaining: 0 },
    ]);
    expect(
      await db().joinRequest.count({ where: { siteId: t.siteId, state: 'approved', poolId: t.poolId, decidedBy: t.operator.actor } }),
    ).toBe(450);
    expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'security.join-request.approved' } })).toBe(450);
    expect(await db().auditEntry.count({ where: { tenantId: t.tenantId, action: 'join-request.approved' } })).toBe(450);
    // Arrived after the count the operator confirmed: not decided unseen.
    expect((await db().joinRequest.findUniqueOrThrow({ where: { id: late.requestId } })).state).toBe('pending');

    const rejected = await rejectJoinRequests(db(), t.operator, {
      ...ref,
      reason: 'not ours',
      matching: { search: 'rack-c1', createdUpTo: listed.asOf },
    });
    expect(rejected).toMatchObject({ skipped: [], remaining: 0 });
    expect(rejected.rejected).toHaveLength(30);
    expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'security.join-request.rejected' } })).toBe(30);
    const left = await listJoinRequests(db(), t.viewer, { ...ref, state: 'pending' });
    expect(left.items.map((r) => r.id)).toEqual([late.requestId]);
  });

  it('admits the retry of a request approved by filter, and leaves one whose token was revoked pending without looping', async () => {
    const t = await createTestTenant(db());
    const ref = { tenantId: t.tenantId, poolId: t.poolId };
    const good = await pxe(t, { hostname: 'edge-1' });
    const revoked = await pxe(t, { hostname: 'edge-2' });
    const { tokenId } = (await db().joinRequest.findUniqueOrThrow({ where: { id: revoked.requestId } })) as { tokenId: string };
    await db().joinToken.update({ where: { id: tokenId }, data: { revokedAt: new Date() } });
    const { asOf } = await listJoinRequests(db(), t.viewer, { ...ref, state: 'pending' });

    const first = await approveJoinRequests(db(), t.operator, {
      ttlSeconds: 3600,
      ...ref,
      matching: { search: 'edge', createdUpTo: asOf },
    });
    expect(first.approved.map((r) => r.id)).toEqual([good.requestId]);
    expect(first.remaining).toBe(0);
    expect((await good.join()).answer).toMatchObject({ status: 'joined', role: 'ramdisk' });
    expect((await db().joinRequest.findUniqueOrThrow({ where: { id: revoked.requestId } })).state).toBe('pending');
    const again = await approveJoinRequests(db(), t.operator, {
      ttlSeconds: 3600,
      ...ref,
      matching: { search: 'edge', createdUpTo: asOf },
    });
    expect(again).toEqual({ approved: [], recorded: [], skipped: [], remaining: 0 });
  });
});

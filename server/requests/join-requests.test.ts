import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { X509Certificate } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../test/join-harness';
import { insertKnownNode, randomMac } from '../../test/discovery-harness';
import type { HardwareClaims } from '../../protocol/hardware-claims';
import { JOIN_REFUSED } from '../../protocol/join-wire';
import { archivePool } from '../pools/pools';
import { updateSite } from '../sites/update';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { approveJoinRequest, rejectJoinRequest } from './decisions';
import { getJoinRequest, listJoinRequests } from './list';

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;

/** A PXE-booted machine: its MAC, claims and one CSR it keeps across retries, and a discovery token for it. */
async function pxeMachine(t: TestTenant, claims: Partial<HardwareClaims> = {}) {
  const mac = randomMac();
  const created = await createDiscoveryToken(db(), t.admin, {
    tenantId: t.tenantId,
    siteId: t.siteId,
    mac,
    ip: '10.1.2.3',
    workflowId: 'wf-9',
    bootLeaseEpoch: 42,
    ttlSeconds: 3600,
  });
  return {
    mac,
    token: created.token!,
    tokenId: created.id,
    claims: machineClaims({ macs: [mac], ...claims }),
    keys: generateNodeKeyAndCsr(),
  };
}
type Machine = Awaited<ReturnType<typeof pxeMachine>>;

const join = (m: Machine, keys: NodeKeyAndCsr = m.keys) =>
  agentJoin(h, m.token, m.claims, { role: 'discovery', attestor: 'discovery', expectedRole: 'ramdisk', keys });
const ref = (t: TestTenant, requestId: string) => ({ tenantId: t.tenantId, poolId: t.poolId, requestId });
const refusals = (t: TestTenant) =>
  db().event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' }, orderBy: { id: 'asc' } });

async function pendingOf(m: Machine) {
  const result = await join(m);
  expect(result.status).toBe(200);
  expect(result.answer).toMatchObject({ status: 'pending', retryAfterSeconds: 30, csrSha256: m.keys.csrSha256 });
  return (result.answer as unknown as { requestId: string }).requestId;
}

describe('a PXE machine from the ramdisk to an approved join', () => {
  it('waits in a request, is approved, and gets a ramdisk certificate that openssl verifies; the request and token are spent once', async () => {
    const t = await createTestTenant(db());
    const m = await pxeMachine(t);
    const requestId = await pendingOf(m);
    // Nothing issued, no token spent, no node row.
    expect((await db().joinToken.findUniqueOrThrow({ where: { id: m.tokenId } })).usesLeft).toBe(1);
    expect(await db().node.count({ where: { siteId: t.siteId } })).toBe(0);
    // The same CSR keeps getting the same request.
    expect(await pendingOf(m)).toBe(requestId);

    const { items } = await listJoinRequests(db(), t.viewer, { state: 'pending', tenantId: t.tenantId, poolId: t.poolId });
    expect(items).toEqual([
      expect.objectContaining({
        id: requestId,
        state: 'pending',
        attestor: 'discovery',
        mac: m.mac,
        ip: '10.1.2.3',
        workflowId: 'wf-9',
        bootLeaseEpoch: 42,
        vouchedBy: t.admin.actor,
        csrSha256: m.keys.csrSha256,
        poolId: null,
        claims: expect.objectContaining({ macs: [m.mac] }),
      }),
    ]);
    expect(items[0]!.hardwareKey).toMatch(/^[0-9a-f]{64}$/);
    expect(items[0]!.hardwareKeyTrusted).toBe(true);
    expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'node.join-request.created' } })).toBe(1);

    const approved = await approveJoinRequest(db(), t.operator, { ...ref(t, requestId), ttlSeconds: 900, reason: 'rack B7 intake' });
    expect(approved).toMatchObject({ state: 'approved', poolId: t.poolId, decidedBy: t.operator.actor, reason: 'rack B7 intake' });

    const admitted = await join(m);
    expect(admitted.status).toBe(200);
    expect(admitted.answer).toMatchObject({ status: 'joined', role: 'ramdisk', siteId: t.siteId });
    const [leaf, ca] = admitted.answer!.certificateChain;
    const cert = new X509Certificate(Buffer.from(leaf!, 'base64'));
    expect((Date.parse(cert.validTo) - Date.parse(cert.validFrom)) / 1000).toBeLessThanOrEqual(7_200);
    const dir = mkdtempSync(path.join(tmpdir(), 'bc-ramdisk-'));
    const pem = (b64: string) => `-----BEGIN CERTIFICATE-----\n${b64.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;
    writeFileSync(path.join(dir, 'leaf.pem'), pem(leaf!));
    writeFileSync(path.join(dir, 'ca.pem'), pem(ca!));
    const verified = execFileSync('openssl', [
      'verify',
      '-purpose',
      'sslclient',
      '-CAfile',
      path.join(dir, 'ca.pem'),
      path.join(dir, 'leaf.pem'),
    ]).toString();
    expect(verified.trim()).toBe(`${path.join(dir, 'leaf.pem')}: OK`);

    const node = await db().node.findUniqueOrThrow({ where: { id: admitted.answer!.nodeId } });
    expect(node).toMatchObject({ poolId: t.poolId, role: 'discovery', attestor: 'discovery', hardwareKeyTrusted: false });
    expect(await getJoinRequest(db(), t.viewer, ref(t, requestId))).toMatchObject({ state: 'consumed', consumedAt: expect.any(String) });
    expect((await db().joinToken.findUniqueOrThrow({ where: { id: m.tokenId } })).usesLeft).toBe(0);
    expect(await db().auditEntry.findFirst({ where: { tenantId: t.tenantId, action: 'join-request.approved' } })).toMatchObject({
      actor: t.operator.actor,
      resource: `compute-join-request/${requestId}`,
      data: expect.objectContaining({ reason: 'rack B7 intake' }),
    });
    expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'security.join-request.approved' } })).toBe(1);

    // A second use of the consumed approval is the uniform 403.
    const again = await join(m);
    expect(again.status).toBe(403);
    expect(again.bytes.equals(JOIN_REFUSED.body)).toBe(true);
  });

  it('refuses a token whose MAC is not among the claims (join:expect) and records nothing', async () => {
    const t = await createTestTenant(db());
    const m = await pxeMachine(t);
    const other = { ...m, claims: machineClaims() };
    expect((await join(other)).status).toBe(403);
    expect((await refusals(t)).map((e) => (e.data as { reason: string }).reason)).toEqual(['join:expect']);
    expect(await db().joinRequest.count({ where: { siteId: t.siteId } })).toBe(0);
  });

  it('refuses a discovery token presented through the join-token attestor (role-mismatch)', async () => {
    const t = await createTestTenant(db());
    const m = await pxeMachine(t);
    await insertKnownNode(t, { macs: [m.mac] });
    const result = await agentJoin(h, m.token, m.claims, { role: 'discovery', keys: m.keys });
    expect(result.status).toBe(403);
    expect((await refusals(t)).map((e) => (e.data as { reason: string }).reason)).toEqual(['join-token:role-mismatch']);
  });
});

describe('the hardware key a request shows', () => {
  it('is trusted with two identifiers, and shown but untrusted when only the MAC identifies the machine', async () => {
    const t = await createTestTenant(db());
    const onlyMac = await pxeMachine(t, { productUuid: undefined, productSerial: undefined });
    const requestId = await pendingOf(onlyMac);
    const record = await getJoinRequest(db(), t.viewer, ref(t, requestId));
    expect(record.hardwareKey).toMatch(/^[0-9a-f]{64}$/);
    expect(record.hardwareKeyTrusted).toBe(false);
  });
});

describe('known machines and the site policy', () => {
  it('admits a machine whose bound MAC belongs to a node of the site at once under unknown-machines, publishing the node it matched, and holds it under always', async () => {
    const t = await createTestTenant(db());
    const m = await pxeMachine(t);
    const known = await insertKnownNode(t, { macs: [m.mac.toUpperCase().replaceAll(':', '-')] });
    await updateSite(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, discovery: { approval: 'always' } });
    await pendingOf(m);
    await updateSite(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, discovery: { approval: 'unknown-machines' } });
    const admitted = await join(m);
    expect(admitted.status).toBe(200);
    expect(admitted.answer).toMatchObject({ status: 'joined', role: 'ramdisk' });
    const events = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'node.join-request.auto-admitted' } });
    expect(events.map((e) => e.data)).toEqual([
      { nodeId: admitted.answer!.nodeId, matchedNodeId: known, mac: m.mac, siteId: t.siteId, attestor: 'discovery', tokenId: m.tokenId },
    ]);
  });

  it("makes a caller that lists another node's MAC beside its bound MAC wait: no certificate, no node, a pending request", async () => {
    const t = await createTestTenant(db());
    const victim = randomMac();
    await insertKnownNode(t, { macs: [victim] });
    const m = await pxeMachine(t);
    const claiming = { ...m, claims: { ...m.claims, macs: [m.mac, victim] } };
    const result = await join(claiming);
    expect(result.status).toBe(200);
    expect(result.answer!.status).toBe('pending');
    expect(await db().node.count({ where: { siteId: t.siteId, role: 'discovery' } })).toBe(0);
    expect(await db().joinRequest.count({ where: { siteId: t.siteId, state: 'pending' } })).toBe(1);
    expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'node.join-request.auto-admitted' } })).toBe(0);
  });

  it("counts a trusted hardware key match only when that node's MACs include the bound MAC, and never a node of another site", async () => {
    const t = await createTestTenant(db());
    const m = await pxeMachine(t);
    const result = await join(m);
    const key = Buffer.from((await db().joinRequest.findFirstOrThrow({ where: { siteId: t.siteId } })).hardwareKey!);
    expect(result.answer!.status).toBe('pending');
    // Same claims, same trusted key, but the node's MACs do not include the token's MAC: the key was the caller's word.
    const keyOnly = await insertKnownNode(t, { productUuid: m.claims.productUuid, macs: [randomMac()] }, key);
    expect((await join(m)).answer!.status).toBe('pending');
    await db().node.delete({ where: { id: keyOnly } });
    const other = await createTestTenant(db());
    await insertKnownNode(other, { productUuid: m.claims.productUuid, macs: [m.mac] }, key);
    expect((await join(m)).answer!.status).toBe('pending');
    await db().node.deleteMany({ where: { siteId: other.siteId } });
    await insertKnownNode(t, { productUuid: m.claims.productUuid, macs: [m.mac] }, key);
    expect((await join(m)).answer!.status).toBe('joined');
  });
});

describe('one request per machine', () => {
  it('refreshes the pending request with a newer attempt (new CSR hash, expiry restarted), keeping its id', async () => {
    const t = await createTestTenant(db());
    const m = await pxeMachine(t);
    const id = await pendingOf(m);
    const before = await getJoinRequest(db(), t.viewer, ref(t, id));
    await db().$executeRaw`UPDATE join_requests SET expires_at = expires_at - interval '1 hour' WHERE id = ${id}`;
    const keys = generateNodeKeyAndCsr();
    const second = await join(m, keys);
    expect((second.answer as unknown as { requestId: string }).requestId).toBe(id);
    const after = await getJoinRequest(db(), t.viewer, ref(t, id));
    expect(after.csrSha256).toBe(keys.csrSha256);
    expect(Date.parse(after.expiresAt)).toBeGreaterThanOrEqual(Date.parse(before.expiresAt));
    expect(await db().joinRequest.count({ where: { siteId: t.siteId } })).toBe(1);
  });

  it('refuses a retry with another CSR after approval and admits the approved one', async () => {
    const t = await createTestTenant(db());
    const m = await pxeMachine(t);
    const id = await pendingOf(m);
    await approveJoinRequest(db(), t.operator, { ...ref(t, id), ttlSeconds: 3600 });
    expect((await join(m, generateNodeKeyAndCsr())).status).toBe(403);
    expect((await refusals(t)).map((e) => (e.data as { reason: string }).reason)).toEqual(['discovery:csr-mismatch']);
    expect((await join(m)).answer!.status).toBe('joined');
  });
});

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

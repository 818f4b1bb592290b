import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { agentJoin, machineClaims } from '../../test/join-harness';
import { insertKnownNode, randomMac } from '../../test/discovery-harness';
import { JOIN_REFUSED } from '../../protocol/join-wire';
import { updateSite } from '../sites/update';
import { approveJoinRequest } from './decisions';
import { pxeMachine, pxeQueue, ref, refusals } from '../../test/pxe-queue';
import { getJoinRequest, listJoinRequests } from './list';

const db = testDb;
const { harness, join, pendingOf } = pxeQueue();

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
    const result = await agentJoin(harness(), m.token, m.claims, { role: 'discovery', keys: m.keys });
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

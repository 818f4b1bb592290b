import { beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { randomMac } from '../../test/discovery-harness';
import type { HardwareClaims } from '../../protocol/hardware-claims';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { approveJoinRequest } from '../requests/decisions';
import { getJoinRequest } from '../requests/list';
import { getNode } from './nodes';
import { operatorNamed, pendingRequest, pxeJoin, pxeMachine, twoPersonTenant } from '../../test/two-person-harness';

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;

/** A PXE machine's ramdisk joins, waits in a request, is approved by an operator and joins: its node and request. */
async function approvedRamdisk(t: TestTenant, claims: HardwareClaims, reason = 'rack B7 intake') {
  const created = await createDiscoveryToken(db(), t.admin, {
    tenantId: t.tenantId,
    siteId: t.siteId,
    mac: claims.macs![0]!,
    ttlSeconds: 3600,
  });
  const keys = generateNodeKeyAndCsr();
  const join = () => agentJoin(h, created.token!, claims, { role: 'discovery', attestor: 'discovery', expectedRole: 'ramdisk', keys });
  const pending = await join();
  expect(pending.answer).toMatchObject({ status: 'pending' });
  const requestId = (pending.answer as unknown as { requestId: string }).requestId;
  await approveJoinRequest(db(), t.operator, { tenantId: t.tenantId, poolId: t.poolId, requestId, ttlSeconds: 900, reason });
  const joined = await join();
  expect(joined.answer).toMatchObject({ status: 'joined', role: 'ramdisk' });
  return { requestId, nodeId: joined.answer!.nodeId };
}

describe('the node page', () => {
  it('names the host, the pool and site, the certificate role and the operator who approved it, when and why', async () => {
    const t = await createTestTenant(db(), { label: 'node-page' });
    const claims = machineClaims({ macs: [randomMac()], hostname: 'r7-u12.lab', gpuUuids: [`GPU-${crypto.randomUUID()}`] });
    const { requestId, nodeId } = await approvedRamdisk(t, claims);
    const node = await getNode(db(), t.viewer, { tenantId: t.tenantId, nodeId });
    expect(node).toMatchObject({
      hostname: 'r7-u12.lab',
      poolName: 'pool-a',
      siteName: 'site-a',
      // The row keeps the token's role; the certificate (what the node presents) says ramdisk.
      role: 'discovery',
      certificateRole: 'ramdisk',
      admission: {
        requestId,
        attestor: 'discovery',
        decidedVia: 'operator',
        decidedBy: t.operator.actor,
        reason: 'rack B7 intake',
        requiredApprovals: 1,
        firstApproval: null,
        decidedAt: expect.any(String),
        consumedAt: expect.any(String),
      },
    });
    // The key trust the page shows for the admission is the request's own.
    const request = await getJoinRequest(db(), t.viewer, { tenantId: t.tenantId, poolId: t.poolId, requestId });
    expect(node.admission!.hardwareKeyTrusted).toBe(request.hardwareKeyTrusted);
  });

  it('a node that joined with a token has no admission and its certificate role is its own', async () => {
    const t = await createTestTenant(db(), { label: 'node-page-token' });
    const token = await mintToken(t);
    const joined = await agentJoin(h, token.token!, machineClaims());
    const node = await getNode(db(), t.viewer, { tenantId: t.tenantId, nodeId: joined.answer!.nodeId });
    expect(node).toMatchObject({ admission: null, hostname: 'r7-u12', role: 'node', certificateRole: 'node' });
  });

  it("the ramdisk's request and the installed OS's node agree on the machine's key trust (two MACs, no serial or UUID)", async () => {
    const t = await createTestTenant(db(), { label: 'node-page-trust' });
    // Two identifiers make a key, but the join trusts a key only when one of them is a serial or the product UUID.
    const claims: HardwareClaims = { macs: [randomMac(), randomMac()], hostname: 'macs-only' };
    const { requestId } = await approvedRamdisk(t, claims);
    const request = await getJoinRequest(db(), t.viewer, { tenantId: t.tenantId, poolId: t.poolId, requestId });
    // A token that expects the machine's MAC admits it (without one, a join-token join refuses such a key).
    const token = await mintToken(t, { expect: { mac: claims.macs![1]! } });
    const os = await agentJoin(h, token.token!, claims);
    const why = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' } });
    expect(os.status, JSON.stringify(why.map((e) => e.data))).toBe(200);
    const osNode = await getNode(db(), t.viewer, { tenantId: t.tenantId, nodeId: os.answer!.nodeId });
    expect(osNode.hasHardwareKey).toBe(true);
    expect(request.hardwareKeyTrusted).toBe(osNode.hardwareKeyTrusted);
    expect(request.hardwareKeyTrusted).toBe(false);
  });

  it('names both approvals of a two-person site, each by name with its time', async () => {
    const t = await twoPersonTenant();
    const [ada, bob] = [await operatorNamed(t, 'Ada'), await operatorNamed(t, 'Bob')];
    const m = await pxeMachine(t);
    const requestId = await pendingRequest(h, m);
    const ref = { tenantId: t.tenantId, poolId: t.poolId, requestId, ttlSeconds: 900 };
    await approveJoinRequest(db(), ada, { ...ref, reason: 'first look' });
    await approveJoinRequest(db(), bob, { ...ref, reason: 'second look' });
    const joined = await pxeJoin(h, m);
    expect(joined.answer).toMatchObject({ status: 'joined' });
    const node = await getNode(db(), t.viewer, { tenantId: t.tenantId, nodeId: joined.answer!.nodeId });
    expect(node.admission).toMatchObject({
      requestId,
      decidedVia: 'operator',
      decidedByName: 'Bob',
      reason: 'second look',
      requiredApprovals: 2,
      firstApproval: { by: ada.actor, byName: 'Ada', at: expect.any(String) },
    });
  });
});

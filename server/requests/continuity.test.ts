import { beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../test/join-harness';
import { randomMac } from '../../test/discovery-harness';
import { getNode, listNodes } from '../nodes/nodes';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { approveJoinRequest } from './decisions';
import { getJoinRequest, listJoinRequests } from './list';

// Once approved, a machine keeps its identity: the node shows the claims it joined with and names the request
// that admitted it, and the consumed request names its node.

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;

describe('a request and the node it admitted', () => {
  it('name each other, and the node keeps the hostname, serial and MACs it joined with', async () => {
    const t = await createTestTenant(db());
    const mac = randomMac();
    const token = (await createDiscoveryToken(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 })).token!;
    const claims = machineClaims({ macs: [mac], hostname: 'gpu-b7-12', productSerial: 'SN-B7-12' });
    const keys = generateNodeKeyAndCsr();
    const join = () => agentJoin(h, token, claims, { role: 'discovery', attestor: 'discovery', expectedRole: 'ramdisk', keys });
    const requestId = ((await join()).answer as unknown as { requestId: string }).requestId;
    const ref = { tenantId: t.tenantId, poolId: t.poolId, requestId };
    expect((await getJoinRequest(db(), t.viewer, ref)).nodeId).toBeNull();
    await approveJoinRequest(db(), t.operator, { ...ref, ttlSeconds: 3600 });
    const joined = (await join()).answer as unknown as { status: string; nodeId: string };
    expect(joined.status).toBe('joined');

    expect(await getJoinRequest(db(), t.viewer, ref)).toMatchObject({ state: 'consumed', nodeId: joined.nodeId });
    const { items } = await listJoinRequests(db(), t.viewer, { tenantId: t.tenantId, poolId: t.poolId, state: 'consumed' });
    expect(items.map((r) => [r.id, r.nodeId])).toEqual([[requestId, joined.nodeId]]);

    const { items: nodes } = await listNodes(db(), t.viewer, { tenantId: t.tenantId, poolId: t.poolId, limit: 100 });
    expect(nodes).toEqual([
      expect.objectContaining({
        id: joined.nodeId,
        joinRequestId: requestId,
        hasHardwareKey: true,
        hardwareKeyTrusted: false,
        claims: expect.objectContaining({ hostname: 'gpu-b7-12', productSerial: 'SN-B7-12', macs: [mac] }),
      }),
    ]);
    expect(await getNode(db(), t.viewer, { tenantId: t.tenantId, nodeId: joined.nodeId })).toMatchObject({
      joinRequestId: requestId,
      claims: expect.objectContaining({ hostname: 'gpu-b7-12' }),
    });
  });
});

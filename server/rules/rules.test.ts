import { beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../test/join-harness';
import { randomMac } from '../../test/discovery-harness';
import type { HardwareClaims } from '../../protocol/hardware-claims';
import { JOIN_REFUSED } from '../../protocol/join-wire';
import { getJoinRequest } from '../requests/list';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { createRule, dryRunRule, listRules } from './rules';

// Approval rules decide a discovery join in its own join transaction, on what the boot step vouched for and
// what the machine claims; a dry run shows, before saving, exactly what the rule then does.

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;

async function pxe(t: TestTenant, claims: Partial<HardwareClaims>) {
  const mac = randomMac();
  const token = (await createDiscoveryToken(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ip: '10.20.1.7' })).token!;
  const keys = generateNodeKeyAndCsr();
  const join = () => agentJoin(h, token, machineClaims({ macs: [mac], ...claims }), { role: 'discovery', attestor: 'discovery', expectedRole: 'ramdisk', keys });
  return { mac, join };
}
const answerOf = async (m: { join: () => ReturnType<typeof agentJoin> }) => {
  const result = await m.join();
  return { http: result.status, ...(result.answer as unknown as { status?: string; requestId?: string; nodeId?: string }) };
};

describe('approval rules', () => {
  it('a dry run lists exactly what the saved rule then does: it admits the matching PXE machine at once and leaves the other pending', async () => {
    const t = await createTestTenant(db());
    const ref = { tenantId: t.tenantId, siteId: t.siteId };
    const a = await pxe(t, { hostname: 'gpu-a-01' });
    const b = await pxe(t, { hostname: 'lab-x-01' });
    const aRequest = (await answerOf(a)).requestId!;
    const bRequest = (await answerOf(b)).requestId!;
    const draft = { ...ref, name: 'rack A intake', match: { hostnamePattern: 'GPU-A-*', subnets: ['10.20.0.0/16'] }, action: 'approve' as const, poolId: t.poolId };

    const dry = await dryRunRule(db(), t.admin, draft);
    expect(dry.considered).toBe(2);
    expect(dry.items).toEqual([expect.objectContaining({ requestId: aRequest, action: 'approve', decidedEarlierBy: null, state: 'pending' })]);
    expect((await listRules(db(), t.viewer, ref)).items).toEqual([]);

    const rule = await createRule(db(), t.admin, draft);
    expect(rule).toMatchObject({ position: 1, action: 'approve', poolId: t.poolId, admissions: 0 });
    // The waiting machine's next retry is admitted by the rule in its own join transaction.
    expect(await answerOf(a)).toMatchObject({ http: 200, status: 'joined' });
    const request = await getJoinRequest(db(), t.viewer, { tenantId: t.tenantId, poolId: t.poolId, requestId: aRequest });
    expect(request).toMatchObject({ state: 'consumed', decidedBy: `rule:${rule.id}`, reason: 'rack A intake', poolId: t.poolId, nodeId: expect.stringMatching(/^node_/) });
    expect((await db().node.findUniqueOrThrow({ where: { id: request.nodeId! } })).poolId).toBe(t.poolId);
    expect(await answerOf(b)).toMatchObject({ http: 200, status: 'pending', requestId: bRequest });
    expect((await getJoinRequest(db(), t.viewer, { tenantId: t.tenantId, poolId: t.poolId, requestId: bRequest })).state).toBe('pending');
    // What the dry run listed is what happened, and nothing else.
    expect((await db().joinRequest.findMany({ where: { siteId: t.siteId, decidedBy: `rule:${rule.id}` } })).map((r) => r.id)).toEqual(dry.items.map((i) => i.requestId));

    // A new machine that matches never waits: its first attempt joins.
    const c = await pxe(t, { hostname: 'gpu-a-02' });
    const first = await c.join();
    expect(first.status).toBe(200);
    expect(first.answer).toMatchObject({ status: 'joined', role: 'ramdisk' });
    expect((await listRules(db(), t.viewer, ref)).items[0]).toMatchObject({ id: rule.id, admissions: 2 });
    const events = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'security.join-request.approved' } });
    expect(events.map((e) => (e.data as { decidedBy: string }).decidedBy)).toEqual([`rule:${rule.id}`, `rule:${rule.id}`]);
    expect(await db().auditEntry.count({ where: { tenantId: t.tenantId, actor: `rule:${rule.id}`, action: 'join-request.approved', data: { path: ['rule'], equals: 'rack A intake' } } })).toBe(2);
  });

  it('rejects by rule (the uniform 403, the request rejected by the rule), stops at maxAdmissions, and refuses a draft without a condition', async () => {
    const t = await createTestTenant(db());
    const ref = { tenantId: t.tenantId, siteId: t.siteId };
    const reject = await createRule(db(), t.admin, { ...ref, name: 'not ours', match: { hostnamePattern: 'lab-*' }, action: 'reject' });
    const once = await createRule(db(), t.admin, { ...ref, name: 'one edge box', match: { hostnamePattern: 'edge-*' }, action: 'approve', poolId: t.poolId, maxAdmissions: 1 });
    expect(once.position).toBe(2);

    const lab = await pxe(t, { hostname: 'lab-7' });
    const refused = await lab.join();
    expect(refused.status).toBe(403);
    expect(refused.bytes.equals(JOIN_REFUSED.body)).toBe(true);
    expect(await db().joinRequest.findFirst({ where: { siteId: t.siteId, decidedBy: `rule:${reject.id}` } })).toMatchObject({ state: 'rejected', reason: 'not ours' });
    expect((await lab.join()).status).toBe(403);

    expect(await answerOf(await pxe(t, { hostname: 'edge-1' }))).toMatchObject({ http: 200, status: 'joined' });
    const second = await answerOf(await pxe(t, { hostname: 'edge-2' }));
    expect(second).toMatchObject({ http: 200, status: 'pending', requestId: expect.stringMatching(/^jreq_/) });
    expect((await db().joinRequest.findUniqueOrThrow({ where: { id: second.requestId! } })).state).toBe('pending');

    expect(await failure(createRule(db(), t.admin, { ...ref, name: 'empty', match: {}, action: 'leave' }))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await failure(createRule(db(), t.admin, { ...ref, name: 'no pool', match: { attestor: 'discovery' }, action: 'approve' }))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'poolId' });
    expect(await failure(createRule(db(), t.operator, { ...ref, name: 'x', match: { attestor: 'discovery' }, action: 'leave' }))).toMatchObject({ code: 'ACCESS_DENIED' });
  });
});

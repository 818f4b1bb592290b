import { beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../test/join-harness';
import { randomMac } from '../../test/discovery-harness';
import type { HardwareClaims } from '../../protocol/hardware-claims';
import { JOIN_REFUSED } from '../../protocol/join-wire';
import { getJoinRequest, listJoinRequests } from '../requests/list';
import { getNode } from '../nodes/nodes';
import { createCaller } from '../api/root';
import { createDiscoveryToken } from '../tokens/site-scoped';
import { createRule, deleteRule, dryRunRule, listRules, moveRule, updateRule } from './rules';

// Approval rules decide a discovery join in its own join transaction, on what the boot step vouched for and
// what the machine claims; a dry run shows, before saving, exactly what the rule then does.

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;

async function pxe(t: TestTenant, claims: Partial<HardwareClaims>) {
  const mac = randomMac();
  const token = (
    await createDiscoveryToken(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ip: '10.20.1.7', ttlSeconds: 3600 })
  ).token!;
  const keys = generateNodeKeyAndCsr();
  const join = () =>
    agentJoin(h, token, machineClaims({ macs: [mac], ...claims }), {
      role: 'discovery',
      attestor: 'discovery',
      expectedRole: 'ramdisk',
      keys,
    });
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
    const draft = {
      ...ref,
      name: 'rack A intake',
      match: { hostnamePattern: 'GPU-A-*', subnets: ['10.20.0.0/16'] },
      action: 'approve' as const,
      poolId: t.poolId,
    };

    const dry = await dryRunRule(db(), t.admin, draft);
    expect(dry.considered).toBe(2);
    expect(dry.items).toEqual([
      expect.objectContaining({ requestId: aRequest, action: 'approve', decidedEarlierBy: null, state: 'pending' }),
    ]);
    expect((await listRules(db(), t.viewer, ref)).items).toEqual([]);

    const rule = await createRule(db(), t.admin, draft);
    expect(rule).toMatchObject({ position: 1, action: 'approve', poolId: t.poolId, admissions: 0 });
    // The waiting machine's next retry is admitted by the rule in its own join transaction.
    expect(await answerOf(a)).toMatchObject({ http: 200, status: 'joined' });
    const request = await getJoinRequest(db(), t.viewer, { tenantId: t.tenantId, poolId: t.poolId, requestId: aRequest });
    expect(request).toMatchObject({
      state: 'consumed',
      decidedBy: `rule:${rule.id}`,
      reason: 'rack A intake',
      poolId: t.poolId,
      nodeId: expect.stringMatching(/^node_/),
    });
    expect((await db().node.findUniqueOrThrow({ where: { id: request.nodeId! } })).poolId).toBe(t.poolId);
    // The queue and the node page say which rule decided.
    expect(request.decidedByName).toBe('rule rack A intake');
    expect(await getNode(db(), t.viewer, { tenantId: t.tenantId, nodeId: request.nodeId! })).toMatchObject({
      joinRequestId: aRequest,
      joinRequestDecidedBy: 'rule rack A intake',
    });
    expect(await answerOf(b)).toMatchObject({ http: 200, status: 'pending', requestId: bRequest });
    expect((await getJoinRequest(db(), t.viewer, { tenantId: t.tenantId, poolId: t.poolId, requestId: bRequest })).state).toBe('pending');
    // What the dry run listed is what happened, and nothing else.
    expect((await db().joinRequest.findMany({ where: { siteId: t.siteId, decidedBy: `rule:${rule.id}` } })).map((r) => r.id)).toEqual(
      dry.items.map((i) => i.requestId),
    );

    // A new machine that matches never waits: its first attempt joins.
    const c = await pxe(t, { hostname: 'gpu-a-02' });
    const first = await c.join();
    expect(first.status).toBe(200);
    expect(first.answer).toMatchObject({ status: 'joined', role: 'ramdisk' });
    expect((await listRules(db(), t.viewer, ref)).items[0]).toMatchObject({ id: rule.id, admissions: 2 });
    const events = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'security.join-request.approved' } });
    expect(events.map((e) => (e.data as { decidedBy: string }).decidedBy)).toEqual([`rule:${rule.id}`, `rule:${rule.id}`]);
    expect(
      await db().auditEntry.count({
        where: {
          tenantId: t.tenantId,
          actor: `rule:${rule.id}`,
          action: 'join-request.approved',
          data: { path: ['rule'], equals: 'rack A intake' },
        },
      }),
    ).toBe(2);
  });

  it('rejects by rule (the uniform 403, the request rejected by the rule), stops at maxAdmissions, and refuses a draft without a condition', async () => {
    const t = await createTestTenant(db());
    const ref = { tenantId: t.tenantId, siteId: t.siteId };
    const reject = await createRule(db(), t.admin, { ...ref, name: 'not ours', match: { hostnamePattern: 'lab-*' }, action: 'reject' });
    const once = await createRule(db(), t.admin, {
      ...ref,
      name: 'one edge box',
      match: { hostnamePattern: 'edge-*' },
      action: 'approve',
      poolId: t.poolId,
      maxAdmissions: 1,
    });
    expect(once.position).toBe(2);

    const lab = await pxe(t, { hostname: 'lab-7' });
    const refused = await lab.join();
    expect(refused.status).toBe(403);
    expect(refused.bytes.equals(JOIN_REFUSED.body)).toBe(true);
    expect(await db().joinRequest.findFirst({ where: { siteId: t.siteId, decidedBy: `rule:${reject.id}` } })).toMatchObject({
      state: 'rejected',
      reason: 'not ours',
    });
    expect((await lab.join()).status).toBe(403);

    expect(await answerOf(await pxe(t, { hostname: 'edge-1' }))).toMatchObject({ http: 200, status: 'joined' });
    const second = await answerOf(await pxe(t, { hostname: 'edge-2' }));
    expect(second).toMatchObject({ http: 200, status: 'pending', requestId: expect.stringMatching(/^jreq_/) });
    expect((await db().joinRequest.findUniqueOrThrow({ where: { id: second.requestId! } })).state).toBe('pending');

    // What a draft may say is the procedure's input schema; createRule takes the parsed draft.
    const rules = createCaller({ db: db(), principal: t.admin }).approvalRules;
    expect(await failure(rules.create({ ...ref, name: 'empty', match: {}, action: 'leave' }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(await failure(rules.create({ ...ref, name: 'no pool', match: { attestor: 'discovery' }, action: 'approve' }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'poolId',
    });
    expect(
      await failure(createRule(db(), t.operator, { ...ref, name: 'x', match: { attestor: 'discovery' }, action: 'leave' })),
    ).toMatchObject({ code: 'ACCESS_DENIED' });
  });

  it('edits, reorders, disables and deletes rules; vendor and model decide on the claims; a dry run of an edit keeps its place', async () => {
    const t = await createTestTenant(db());
    const ref = { tenantId: t.tenantId, siteId: t.siteId };
    const dell = await pxe(t, { hostname: 'r760-1', sysVendor: 'Dell Inc.', productName: 'PowerEdge R760xa' });
    const smc = await pxe(t, { hostname: 'smc-1', sysVendor: 'Supermicro', productName: 'SYS-421GE-TNRT' });
    const dellRequest = (await answerOf(dell)).requestId!;
    const smcRequest = (await answerOf(smc)).requestId!;
    // The queue's search covers the claimed vendor and model.
    const search = (text: string) =>
      listJoinRequests(db(), t.viewer, { state: 'pending', tenantId: t.tenantId, poolId: t.poolId, search: text }).then((page) =>
        page.items.map((i) => i.id),
      );
    expect(await search('poweredge R760')).toEqual([dellRequest]);
    expect(await search('SUPERMICRO')).toEqual([smcRequest]);

    const leave = await createRule(db(), t.admin, { ...ref, name: 'hold every Dell', match: { vendors: ['dell*'] }, action: 'leave' });
    // Appended, the draft sees the Dell taken by the earlier rule; edited in place (first), it decides both.
    const gpuServers = {
      ...ref,
      name: 'GPU servers',
      match: { models: ['PowerEdge R760*', 'SYS-421GE-*'] },
      action: 'approve' as const,
      poolId: t.poolId,
    };
    const appended = await dryRunRule(db(), t.admin, gpuServers);
    expect(appended.items.map((i) => [i.requestId, i.decidedEarlierBy])).toEqual([
      [dellRequest, leave.id],
      [smcRequest, null],
    ]);
    expect(appended.matchedOn).toEqual([{ field: 'models', source: 'claimed' }]);
    expect(appended.items[0]).toMatchObject({ hostname: 'r760-1', mac: dell.mac });
    const admit = await createRule(db(), t.admin, gpuServers);

    const moved = await moveRule(db(), t.admin, { ...ref, ruleId: admit.id, position: 1 });
    expect(moved.map((r) => [r.id, r.position])).toEqual([
      [admit.id, 1],
      [leave.id, 2],
    ]);
    const edit = await dryRunRule(db(), t.admin, { ...gpuServers, ruleId: admit.id });
    expect(edit.items.map((i) => [i.requestId, i.decidedEarlierBy])).toEqual([
      [dellRequest, null],
      [smcRequest, null],
    ]);

    // Disabled, it decides nothing: both stay pending; enabled again with a narrower model, only the Supermicro joins.
    await updateRule(db(), t.admin, {
      ...ref,
      ruleId: admit.id,
      name: 'GPU servers',
      match: { models: ['PowerEdge R760*', 'SYS-421GE-*'] },
      action: 'approve',
      poolId: t.poolId,
      enabled: false,
    });
    expect(await answerOf(smc)).toMatchObject({ status: 'pending', requestId: smcRequest });
    const updated = await updateRule(db(), t.admin, {
      ...ref,
      ruleId: admit.id,
      name: 'Supermicro GPU',
      match: { vendors: ['supermicro'], models: ['SYS-421GE-*'] },
      action: 'approve',
      poolId: t.poolId,
      enabled: true,
    });
    expect(updated).toMatchObject({
      name: 'Supermicro GPU',
      position: 1,
      enabled: true,
      match: { vendors: ['supermicro'], models: ['SYS-421GE-*'] },
    });
    expect(await answerOf(smc)).toMatchObject({ http: 200, status: 'joined' });
    expect(await answerOf(dell)).toMatchObject({ status: 'pending', requestId: dellRequest });
    expect((await db().joinRequest.findUniqueOrThrow({ where: { id: smcRequest } })).decidedBy).toBe(`rule:${admit.id}`);

    expect(
      await failure(
        updateRule(db(), t.admin, {
          ...ref,
          ruleId: 'rule_' + 'x'.repeat(26),
          name: 'x',
          match: { attestor: 'discovery' },
          action: 'leave',
        }),
      ),
    ).toMatchObject({ code: expect.stringMatching(/NOT_FOUND|INVALID_ARGUMENT/) });
    expect(await failure(moveRule(db(), t.operator, { ...ref, ruleId: admit.id, position: 2 }))).toMatchObject({ code: 'ACCESS_DENIED' });
    await deleteRule(db(), t.admin, { ...ref, ruleId: leave.id });
    expect((await listRules(db(), t.viewer, ref)).items.map((r) => r.id)).toEqual([admit.id]);
  });
});

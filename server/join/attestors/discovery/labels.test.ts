import { beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../../../agent/keys';
import { testDb } from '../../../../test/db';
import { createTestTenant, type TestTenant } from '../../../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../../../test/join-harness';
import { randomMac } from '../../../../test/discovery-harness';
import { issueJoinToken } from '../../../tokens/issue';
import { createRule } from '../../../rules/rules';
import { createRuleInput } from '../../../rules/schemas';
import { importExpectedInput, importExpectedMachines } from '../../../expected/expected';
import { approveJoinRequest } from '../../../requests/decisions';
import { operatorNamed, pendingRequest, pxeJoin, pxeMachine, twoPersonTenant } from '../../../../test/two-person-harness';

// A discovery join's node gets its labels in the join transaction from every source that admitted it, lowest
// first: the discovery token, then the approval rule, the expected machine or the approval that decided it
// (later keys override earlier ones).

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;

/** A PXE machine with a discovery token carrying `labels` (minted as the boot module mints them). */
async function pxe(t: TestTenant, labels: Record<string, string>) {
  const mac = randomMac();
  const issued = await db().$transaction((tx) =>
    issueJoinToken(tx, {
      tenantId: t.tenantId,
      poolId: null,
      siteId: t.siteId,
      role: 'discovery',
      ttlSeconds: 600,
      maxUses: 1,
      boundMac: mac,
      discovery: { ip: '10.0.0.7', workflowId: 'wf-1', vouchedBy: 'module:boot', bootLeaseEpoch: 7 },
      createdBy: 'module:boot',
      labels,
    }),
  );
  const keys = generateNodeKeyAndCsr();
  const join = async () => {
    const result = await agentJoin(h, issued.token!, machineClaims({ macs: [mac] }), {
      role: 'discovery',
      attestor: 'discovery',
      expectedRole: 'ramdisk',
      keys,
    });
    return result.answer as unknown as { status: string; requestId?: string; nodeId?: string };
  };
  return { mac, join };
}

const labelsOf = async (nodeId: string) => (await db().node.findUniqueOrThrow({ where: { id: nodeId } })).labels;
const TOKEN = { rack: 'token', env: 'token', zone: 'token' };

describe('labels of a discovery join', () => {
  it('an approving rule: its labels over the token labels', async () => {
    const t = await createTestTenant(db());
    const m = await pxe(t, TOKEN);
    await createRule(db(), t.admin, {
      tenantId: t.tenantId,
      siteId: t.siteId,
      name: 'rack c7',
      match: { macPrefixes: [m.mac] },
      action: 'approve',
      poolId: t.poolId,
      labels: { rack: 'rule', owner: 'rule' },
    });
    const answer = await m.join();
    expect(answer.status).toBe('joined');
    expect(await labelsOf(answer.nodeId!)).toEqual({ rack: 'rule', env: 'token', zone: 'token', owner: 'rule' });
    const [event] = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'node.joined' } });
    expect((event!.data as { labels: unknown }).labels).toEqual({ rack: 'rule', env: 'token', zone: 'token', owner: 'rule' });
  });

  it('a rule that does not approve gives no labels', async () => {
    const t = await createTestTenant(db());
    const base = { tenantId: t.tenantId, siteId: t.siteId, name: 'leave', match: { vendors: ['x'] } } as const;
    expect(createRuleInput.safeParse({ ...base, action: 'leave', labels: { rack: 'c7' } }).success).toBe(false);
    expect(createRuleInput.safeParse({ ...base, action: 'leave' }).success).toBe(true);
  });

  it('an expected machine: the import labels, the row labels over them, over the token labels', async () => {
    const t = await createTestTenant(db());
    const m = await pxe(t, TOKEN);
    const imported = await importExpectedMachines(
      db(),
      t.admin,
      importExpectedInput.parse({
        tenantId: t.tenantId,
        siteId: t.siteId,
        format: 'csv',
        content: ['mac,labels', `${m.mac},rack=row;gpu=h100`, `${randomMac()},bad label`].join('\n'),
        defaultPoolId: t.poolId,
        labels: { rack: 'import', env: 'import' },
      }),
    );
    expect(imported.accepted).toBe(1);
    expect(imported.rejected).toEqual([{ row: 2, reason: expect.stringMatching(/^labels: "bad label" is not key=value/) }]);
    expect(imported.sample[0]!.labels).toEqual({ rack: 'row', env: 'import', gpu: 'h100' });
    const answer = await m.join();
    expect(answer.status).toBe('joined');
    expect(await labelsOf(answer.nodeId!)).toEqual({ rack: 'row', env: 'import', zone: 'token', gpu: 'h100' });
  });

  it('an approval: its labels over the token labels, and a JSON import row may give an object', async () => {
    const t = await createTestTenant(db());
    const m = await pxe(t, TOKEN);
    const pending = await m.join();
    expect(pending.status).toBe('pending');
    const approved = await approveJoinRequest(db(), t.operator, {
      tenantId: t.tenantId,
      poolId: t.poolId,
      requestId: pending.requestId!,
      ttlSeconds: 3600,
      labels: { zone: 'approval', team: 'approval' },
    });
    expect(approved.state).toBe('approved');
    const answer = await m.join();
    expect(answer.status).toBe('joined');
    expect(await labelsOf(answer.nodeId!)).toEqual({ rack: 'token', env: 'token', zone: 'approval', team: 'approval' });
    const [audit] = await db().auditEntry.findMany({ where: { tenantId: t.tenantId, action: 'join-request.approved' } });
    expect(audit!.data).toMatchObject({ labels: { zone: 'approval', team: 'approval' } });

    const json = await importExpectedMachines(
      db(),
      t.admin,
      importExpectedInput.parse({
        tenantId: t.tenantId,
        siteId: t.siteId,
        format: 'json',
        content: JSON.stringify([
          { mac: randomMac(), labels: { rack: 'c7' } },
          { mac: randomMac(), labels: { 'Bad Key': 'x' } },
        ]),
        defaultPoolId: t.poolId,
        preview: true,
      }),
    );
    expect(json.sample.map((r) => r.labels)).toEqual([{ rack: 'c7' }]);
    expect(json.rejected).toEqual([{ row: 2, reason: expect.stringMatching(/^labels: /) }]);
  });

  it('two approvals: the second approval labels merge over the first', async () => {
    const t = await twoPersonTenant();
    const [ana, ben] = [await operatorNamed(t, 'Ana'), await operatorNamed(t, 'Ben')];
    const m = await pxeMachine(t);
    const requestId = await pendingRequest(h, m);
    const ref = { tenantId: t.tenantId, poolId: t.poolId, requestId, ttlSeconds: 3600 };
    await approveJoinRequest(db(), ana, { ...ref, labels: { rack: 'ana', team: 'ana' } });
    expect(await approveJoinRequest(db(), ben, { ...ref, labels: { team: 'ben' } })).toMatchObject({ state: 'approved' });
    const joined = await pxeJoin(h, m);
    expect(joined.answer).toMatchObject({ status: 'joined' });
    expect(await labelsOf((joined.answer as unknown as { nodeId: string }).nodeId)).toEqual({ rack: 'ana', team: 'ben' });
  });
});

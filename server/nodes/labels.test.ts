import { beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { createCaller } from '../api/root';
import { setNodeLabels } from './labels';
import { setNodeLabelsInput, type SetNodeLabelsInput } from '../../protocol/api/node-labels-schemas';
import type { Principal } from '../authz/principal';

// Operators edit a node's labels after it joined: set, override, remove or replace them, one audit row and one
// `node.labels-changed` event per change, nothing written when nothing changes.

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;
const edit = (p: Principal, input: SetNodeLabelsInput) => setNodeLabels(db(), p, setNodeLabelsInput.parse(input));

describe('nodes.setLabels', () => {
  it('sets, overrides and removes labels, audited and published; an unchanged set writes nothing', async () => {
    const t = await createTestTenant(db());
    const joined = await agentJoin(h, (await mintToken(t, { labels: { rack: 'c7', env: 'prod' } })).token!, machineClaims());
    const nodeId = joined.answer!.nodeId;
    const ref = { tenantId: t.tenantId, nodeId };

    const node = await edit(t.operator, { ...ref, set: { env: 'staging', gpu: 'h100' }, remove: ['rack'] });
    expect(node.labels).toEqual({ env: 'staging', gpu: 'h100' });
    expect((await db().node.findUniqueOrThrow({ where: { id: nodeId } })).labels).toEqual({ env: 'staging', gpu: 'h100' });
    // Through tRPC, as the console's editor sends it: the whole set.
    const replaced = await createCaller({ db: db(), principal: t.operator }).nodes.setLabels({
      ...ref,
      set: { owner: 'team-a' },
      replace: true,
    });
    expect(replaced.labels).toEqual({ owner: 'team-a' });
    await edit(t.operator, { ...ref, set: { owner: 'team-a' } });

    const audit = await db().auditEntry.findMany({
      where: { tenantId: t.tenantId, action: 'node.labels-changed' },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((a) => ({ actor: a.actor, resource: a.resource, data: a.data }))).toEqual([
      {
        actor: t.operator.actor,
        resource: `compute-node/${nodeId}`,
        data: { nodeId, labels: { env: 'staging', gpu: 'h100' }, previous: { rack: 'c7', env: 'prod' } },
      },
      {
        actor: t.operator.actor,
        resource: `compute-node/${nodeId}`,
        data: { nodeId, labels: { owner: 'team-a' }, previous: { env: 'staging', gpu: 'h100' } },
      },
    ]);
    const events = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'node.labels-changed' }, orderBy: { id: 'asc' } });
    expect(events.map((e) => e.data)).toEqual([
      { nodeId, labels: { env: 'staging', gpu: 'h100' }, previous: { rack: 'c7', env: 'prod' }, actor: t.operator.actor },
      { nodeId, labels: { owner: 'team-a' }, previous: { env: 'staging', gpu: 'h100' }, actor: t.operator.actor },
    ]);
  });

  it('refuses a result past 32 labels, a bad key, a viewer and another tenant', async () => {
    const t = await createTestTenant(db());
    const nodeId = (await agentJoin(h, (await mintToken(t)).token!, machineClaims())).answer!.nodeId;
    const ref = { tenantId: t.tenantId, nodeId };
    await edit(t.operator, { ...ref, set: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`a${i}`, 'v'])) });
    expect(
      await failure(edit(t.operator, { ...ref, set: Object.fromEntries(Array.from({ length: 13 }, (_, i) => [`b${i}`, 'v'])) })),
    ).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(setNodeLabelsInput.safeParse({ ...ref, set: { 'Not A Key': 'v' } }).success).toBe(false);
    expect(await failure(edit(t.viewer, { ...ref, set: { x: 'y' } }))).toMatchObject({ code: 'ACCESS_DENIED' });
    const other = await createTestTenant(db());
    expect(await failure(edit(other.admin, { tenantId: other.tenantId, nodeId, set: { x: 'y' } }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(Object.keys((await db().node.findUniqueOrThrow({ where: { id: nodeId } })).labels as object)).toHaveLength(20);
  });
});

import { beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { getNode, listNodes } from '../nodes/nodes';
import { setNodeLabels } from '../nodes/labels';
import { setNodeLabelsInput } from '../../protocol/api/node-labels-schemas';
import { listNodesInput } from '../../protocol/api/node-schemas';

// Labels set at join through a join token: the node gets the token's labels in the join transaction, the
// event and the audit row carry them, a reclaim keeps the node's labels and merges the new token's over them,
// and labels reach neither the certificate nor any authorization decision.

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = () => testDb();

describe('labels from a join token', () => {
  it('gives the node the token labels at admission, in its event and audit row, and never in its certificate', async () => {
    const t = await createTestTenant(db());
    const minted = await mintToken(t, { labels: { rack: 'c7', 'env.stage': 'prod-zz9' } });
    expect(minted.labels).toEqual({ rack: 'c7', 'env.stage': 'prod-zz9' });

    const joined = await agentJoin(h, minted.token!, machineClaims());
    expect(joined.status).toBe(200);
    const nodeId = joined.answer!.nodeId;
    expect((await db().node.findUniqueOrThrow({ where: { id: nodeId } })).labels).toEqual({ rack: 'c7', 'env.stage': 'prod-zz9' });
    const [event] = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'node.joined' } });
    expect(event!.data).toMatchObject({ nodeId, labels: { rack: 'c7', 'env.stage': 'prod-zz9' } });
    const [audit] = await db().auditEntry.findMany({ where: { tenantId: t.tenantId, action: 'node.joined' } });
    expect(audit!.data).toMatchObject({ labels: { rack: 'c7', 'env.stage': 'prod-zz9' } });

    // The certificate names the node and its role, nothing of its labels (keys or values).
    const cert = await db().nodeCert.findFirstOrThrow({ where: { nodeId } });
    const der = Buffer.from(cert.der);
    for (const text of ['prod-zz9', 'env.stage', 'rack']) expect(der.includes(Buffer.from(text))).toBe(false);
    expect(cert.role).toBe('node');
  });

  it('keeps the node labels on a reclaim and merges the new token labels over them', async () => {
    const t = await createTestTenant(db());
    const claims = machineClaims();
    const first = await agentJoin(h, (await mintToken(t, { labels: { rack: 'c7', env: 'prod' } })).token!, claims);
    expect(first.status).toBe(200);
    const nodeId = first.answer!.nodeId;
    await setNodeLabels(db(), t.admin, setNodeLabelsInput.parse({ tenantId: t.tenantId, nodeId, set: { owner: 'team-a' } }));

    const again = await agentJoin(h, (await mintToken(t, { allowReclaim: true, labels: { env: 'staging' } })).token!, claims);
    expect(again.status).toBe(200);
    expect(again.answer!.nodeId).toBe(nodeId);
    const node = await db().node.findUniqueOrThrow({ where: { id: nodeId } });
    expect(node).toMatchObject({ identityGeneration: 2, labels: { rack: 'c7', env: 'staging', owner: 'team-a' } });
    const events = await db().event.findMany({ where: { tenantId: t.tenantId, type: 'node.joined' }, orderBy: { id: 'asc' } });
    expect(events.map((e) => (e.data as { labels: unknown }).labels)).toEqual([
      { rack: 'c7', env: 'prod' },
      { rack: 'c7', env: 'staging', owner: 'team-a' },
    ]);
    const [reclaimed] = await db().auditEntry.findMany({ where: { tenantId: t.tenantId, action: 'node.reclaimed' } });
    expect(reclaimed!.data).toMatchObject({ labels: { rack: 'c7', env: 'staging', owner: 'team-a' } });
  });

  it('never widens access: a label naming another tenant, pool or role changes no decision', async () => {
    const t = await createTestTenant(db());
    const other = await createTestTenant(db());
    const minted = await mintToken(t, { labels: { tenant: other.tenantId, pool: other.poolId, role: 'admin' } });
    const joined = await agentJoin(h, minted.token!, machineClaims());
    expect(joined.status).toBe(200);
    const nodeId = joined.answer!.nodeId;

    // The other tenant's admin cannot see the node, by id or by a filter on the very labels that name it.
    expect(await failure(getNode(db(), other.admin, { tenantId: other.tenantId, nodeId }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await failure(getNode(db(), other.admin, { tenantId: t.tenantId, nodeId }))).toMatchObject({ code: 'NOT_FOUND' });
    const listed = await listNodes(
      db(),
      other.admin,
      listNodesInput.parse({ tenantId: other.tenantId, labels: [`tenant=${other.tenantId}`] }),
    );
    expect(listed.items.map((n) => n.id)).not.toContain(nodeId);
    // A viewer of the node's own tenant still only reads: labels cannot be edited without nodes:manage.
    expect(
      await failure(setNodeLabels(db(), t.viewer, setNodeLabelsInput.parse({ tenantId: t.tenantId, nodeId, set: { role: 'viewer' } }))),
    ).toMatchObject({ code: 'ACCESS_DENIED' });
    // The certificate's role is the token's, whatever `role` label the node carries.
    expect((await db().nodeCert.findFirstOrThrow({ where: { nodeId } })).role).toBe('node');
  });
});

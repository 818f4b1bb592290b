import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertApiKey } from '../api-keys/api-keys';
import { runCliInProcess, startApiServer, type ApiServer } from '../../test/cli';
import { createCaller } from '../api/root';
import { newId } from '../ids';
import { testDb } from '../../test/db';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { NODE_BULK_PAGE, type NodeBulkResult } from '../../protocol/api/node-bulk-schemas';
import { bulkNodeAction } from './bulk';

const db = testDb;
let h: JoinHarness;
let api: ApiServer;
beforeAll(async () => {
  h = await createJoinHarness();
  api = await startApiServer(db());
});
afterAll(async () => {
  await api?.close();
});

/** `count` nodes of the tenant in `poolId` (the default pool), written directly: a bulk action reads only rows. */
async function insertNodes(t: TestTenant, count: number, extra: { poolId?: string; labels?: Record<string, string>; state?: string } = {}) {
  const ids = Array.from({ length: count }, () => newId('node'));
  await db().node.createMany({
    data: ids.map((id, i) => ({
      id,
      tenantId: t.tenantId,
      siteId: t.siteId,
      poolId: extra.poolId ?? t.poolId,
      role: 'node',
      state: extra.state ?? 'adopted',
      trust: 'tenant-owned',
      claims: { hostname: `bulk-${i}` },
      attestor: 'join-token',
      labels: extra.labels ?? {},
    })),
  });
  return ids.sort();
}

/** Walks every page of a bulk action by filter, as the console and the CLI do. */
async function walk(run: (after: string | undefined) => Promise<NodeBulkResult>) {
  const all: NodeBulkResult = { changed: [], unchanged: [], skipped: [], nextAfter: null };
  let after: string | undefined;
  let pages = 0;
  for (;;) {
    const page = await run(after);
    pages++;
    all.changed.push(...page.changed);
    all.unchanged.push(...page.unchanged);
    all.skipped.push(...page.skipped);
    if (!page.nextAfter) return { ...all, pages };
    after = page.nextAfter;
  }
}

const auditOf = (t: TestTenant, action: string) => db().auditEntry.findMany({ where: { tenantId: t.tenantId, action } });

describe('bulk actions on nodes by filter', () => {
  it('cordons every node the filter selects, a page at a time, with an audit row and event per node; again changes nothing', async () => {
    const t = await createTestTenant(db(), { label: 'bulk-cordon' });
    const other = await t.newPool();
    const selected = await insertNodes(t, NODE_BULK_PAGE * 2 + 7);
    const outside = await insertNodes(t, 3, { poolId: other });
    const cordon = (after?: string) =>
      bulkNodeAction(db(), t.operator, { tenantId: t.tenantId, matching: { poolId: t.poolId }, after, action: 'cordon' });
    const first = await walk(cordon);
    expect(first.pages).toBe(3);
    expect(first.changed.sort()).toEqual(selected);
    expect(first.skipped).toEqual([]);
    expect(await db().node.count({ where: { id: { in: selected }, cordoned: true } })).toBe(selected.length);
    expect(await db().node.count({ where: { id: { in: outside }, cordoned: true } })).toBe(0);
    const audit = await auditOf(t, 'node.cordoned');
    expect(audit.map((a) => a.resource).sort()).toEqual(selected.map((id) => `compute-node/${id}`));
    expect(new Set(audit.map((a) => a.actor))).toEqual(new Set([t.operator.actor]));
    expect(await db().event.count({ where: { tenantId: t.tenantId, type: 'node.cordoned' } })).toBe(selected.length);

    const again = await walk(cordon);
    expect(again.changed).toEqual([]);
    expect(again.unchanged.sort()).toEqual(selected);
    expect(await auditOf(t, 'node.cordoned')).toHaveLength(selected.length);

    const uncordon = await bulkNodeAction(db(), t.operator, { tenantId: t.tenantId, nodeIds: outside.slice(0, 1), action: 'uncordon' });
    expect(uncordon).toMatchObject({ changed: [], unchanged: outside.slice(0, 1), nextAfter: null });
  });

  it('sets and removes labels on the nodes a label selects, audited per node with the labels before and after', async () => {
    const t = await createTestTenant(db(), { label: 'bulk-labels' });
    const prod = await insertNodes(t, 4, { labels: { env: 'prod', old: 'x' } });
    const dev = await insertNodes(t, 2, { labels: { env: 'dev' } });
    const result = await bulkNodeAction(db(), t.operator, {
      tenantId: t.tenantId,
      matching: { labels: ['env=prod'] },
      action: 'set-labels',
      set: { rack: 'c7' },
      remove: ['old'],
    });
    expect(result.changed.sort()).toEqual(prod);
    const rows = await db().node.findMany({ where: { tenantId: t.tenantId }, select: { id: true, labels: true } });
    for (const row of rows) expect(row.labels).toEqual(prod.includes(row.id) ? { env: 'prod', rack: 'c7' } : { env: 'dev' });
    const audit = await auditOf(t, 'node.labels-changed');
    expect(audit).toHaveLength(prod.length);
    // The same audit data as the label editor's (nodes.setLabels) for the same action.
    expect(audit[0]!.data).toEqual({
      nodeId: audit[0]!.resource.replace('compute-node/', ''),
      labels: { env: 'prod', rack: 'c7' },
      previous: { env: 'prod', old: 'x' },
    });
    expect(prod).toContain(audit[0]!.resource.replace('compute-node/', ''));
    expect(dev).toHaveLength(2);

    // A result over the label limit is skipped with why, the other nodes of the page still change.
    const many = Object.fromEntries(Array.from({ length: 31 }, (_, i) => [`k${i}`, 'v']));
    await db().node.update({ where: { id: dev[0]! }, data: { labels: { ...many, env: 'dev' } } });
    const crowded = await bulkNodeAction(db(), t.operator, { tenantId: t.tenantId, nodeIds: dev, action: 'set-labels', set: { a: '1' } });
    expect(crowded.changed).toEqual([dev[1]]);
    expect(crowded.skipped).toEqual([{ nodeId: dev[0], reason: expect.stringContaining('at most 32 labels') }]);
  });

  it('revokes the identity of each selected node (its certificates), skips a retired node for cordon, and leaves later joins alone', async () => {
    const t = await createTestTenant(db(), { label: 'bulk-revoke' });
    const joined = await agentJoin(h, (await mintToken(t)).token!, machineClaims({ hostname: 'bulk-revoke' }));
    const nodeId = joined.answer!.nodeId;
    const asOf = new Date().toISOString();
    const revoked = await bulkNodeAction(db(), t.operator, {
      tenantId: t.tenantId,
      matching: { search: 'bulk-revoke', createdUpTo: asOf },
      action: 'revoke-identity',
    });
    expect(revoked.changed).toEqual([nodeId]);
    expect(await db().nodeCert.count({ where: { nodeId, revokedAt: null } })).toBe(0);
    expect(await auditOf(t, 'node.identity-revoked')).toHaveLength(1);

    // A node that joined after the count is not taken.
    const late = await insertNodes(t, 1);
    await db().node.update({ where: { id: late[0]! }, data: { createdAt: new Date(Date.parse(asOf) + 60_000) } });
    const counted = await bulkNodeAction(db(), t.operator, { tenantId: t.tenantId, matching: { createdUpTo: asOf }, action: 'cordon' });
    expect(counted.changed).toEqual([nodeId]);

    const retired = await insertNodes(t, 1, { state: 'retired' });
    const refused = await bulkNodeAction(db(), t.operator, { tenantId: t.tenantId, nodeIds: retired, action: 'cordon' });
    expect(refused.skipped).toEqual([{ nodeId: retired[0], reason: expect.stringContaining('retired') }]);
  });

  it('needs compute:nodes:manage: a viewer is refused, another tenant sees nothing, and no node changes', async () => {
    const t = await createTestTenant(db(), { label: 'bulk-authz' });
    const stranger = await createTestTenant(db(), { label: 'bulk-stranger' });
    const ids = await insertNodes(t, 2);
    const viewer = createCaller({ db: db(), principal: t.viewer });
    expect(await failure(viewer.nodes.bulk({ tenantId: t.tenantId, matching: {}, action: 'cordon' }))).toMatchObject({
      code: 'ACCESS_DENIED',
    });
    expect(await failure(bulkNodeAction(db(), stranger.operator, { tenantId: t.tenantId, nodeIds: ids, action: 'cordon' }))).toMatchObject({
      code: 'NOT_FOUND',
    });
    // Another tenant's node named among one's own is skipped as not found.
    const mine = await insertNodes(stranger, 1);
    const mixed = await bulkNodeAction(db(), stranger.operator, {
      tenantId: stranger.tenantId,
      nodeIds: [...ids, ...mine],
      action: 'cordon',
    });
    expect(mixed.changed).toEqual(mine);
    expect(mixed.skipped.map((s) => s.nodeId).sort()).toEqual(ids);
    expect(await db().node.count({ where: { id: { in: ids }, cordoned: true } })).toBe(0);
    expect(await auditOf(t, 'node.cordoned')).toHaveLength(0);
    // The input is checked at the edge: ids or a filter, not both; set-labels needs a label.
    const operator = createCaller({ db: db(), principal: t.operator });
    expect(await failure(operator.nodes.bulk({ tenantId: t.tenantId, nodeIds: ids, matching: {}, action: 'cordon' }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(await failure(operator.nodes.bulk({ tenantId: t.tenantId, nodeIds: ids, action: 'set-labels' }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});

describe('nodes bulk (CLI over REST)', () => {
  it('cordons --all-matching the filter with --yes, refuses without it, and labels named nodes', async () => {
    const t = await createTestTenant(db(), { label: 'bulk-cli' });
    const other = await t.newPool();
    const selected = await insertNodes(t, NODE_BULK_PAGE + 3);
    const outside = await insertNodes(t, 2, { poolId: other });
    const key = (await insertApiKey(db(), { tenantId: t.tenantId, role: 'operator', name: 'bulk' }, 'test')).key;
    const env = { BETTER_COMPUTE_URL: api.url, BETTER_COMPUTE_API_KEY: key };
    const unconfirmed = await runCliInProcess(['nodes', 'bulk', 'cordon', '--all-matching', '--pool', t.poolId], env);
    expect(unconfirmed.code).not.toBe(0);
    expect(unconfirmed.stderr).toContain('--yes');
    expect(await db().node.count({ where: { tenantId: t.tenantId, cordoned: true } })).toBe(0);

    const run = await runCliInProcess(['nodes', 'bulk', 'cordon', '--all-matching', '--pool', t.poolId, '--yes'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`changed ${selected.length} node(s)`);
    expect(await db().node.count({ where: { id: { in: selected }, cordoned: true } })).toBe(selected.length);
    expect(await db().node.count({ where: { id: { in: outside }, cordoned: true } })).toBe(0);
    expect(await auditOf(t, 'node.cordoned')).toHaveLength(selected.length);

    const labelled = await runCliInProcess(['nodes', 'bulk', 'set-labels', ...outside, '--set', 'rack=c7', '--json'], env);
    expect(labelled.code, labelled.stderr).toBe(0);
    expect(JSON.parse(labelled.stdout).changed.sort()).toEqual(outside);
  });

  it('takes the filters of nodes list (a yes/no --connected, --expiring-within)', async () => {
    const t = await createTestTenant(db(), { label: 'bulk-cli-filters' });
    const other = await t.newPool();
    await insertNodes(t, 2);
    const outside = await insertNodes(t, 3, { poolId: other });
    const key = (await insertApiKey(db(), { tenantId: t.tenantId, role: 'operator', name: 'bulk' }, 'test')).key;
    const env = { BETTER_COMPUTE_URL: api.url, BETTER_COMPUTE_API_KEY: key };
    const args = (connected: string, zone: string) => [
      ...['nodes', 'bulk', 'set-labels', '--all-matching', '--pool', other, '--connected', connected],
      ...['--set', `zone=${zone}`, '--yes', '--json'],
    ];
    const run = await runCliInProcess(args('no', 'b'), env);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).changed.sort()).toEqual(outside);
    const none = await runCliInProcess(args('yes', 'c'), env);
    expect(none.code, none.stderr).toBe(0);
    expect(JSON.parse(none.stdout).changed).toEqual([]);
    const bad = await runCliInProcess(['nodes', 'bulk', 'cordon', '--all-matching', '--expiring-within', 'soon', '--yes'], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('duration');
  });
});

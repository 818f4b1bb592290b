import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess, startCliApi, type ApiServer } from '../../test/cli';
import { testDb } from '../../test/db';
import { captureStderr, type TestTenant } from '../../test/fixtures';
import { insertKnownNode, randomMac } from '../../test/discovery-harness';

// `--label k=v` where labels are given at join, and `nodes label` where operators edit them later.

const db = testDb();
const stderr = captureStderr();
let api: ApiServer;
let env: Record<string, string>;
let t: TestTenant;

beforeAll(async () => {
  ({ api, t, env } = await startCliApi(db, { label: 'labels-cli', role: 'admin' }));
});
afterAll(async () => {
  stderr.stop();
  await api?.close();
});

const cli = (args: string[]) => runCliInProcess(args, env);

describe('better-compute labels', { timeout: 60_000 }, () => {
  it('join-tokens create and approval-rules create take --label; a bad one fails before any request', async () => {
    const run = await cli([
      'join-tokens',
      'create',
      '--tenant',
      t.tenantId,
      '--pool',
      t.poolId,
      '--ttl',
      '1h',
      '--key',
      'l-1',
      '--json',
      '--label',
      'rack=c7',
      '--label',
      'env=prod',
    ]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const id = (JSON.parse(run.stdout) as { id: string }).id;
    expect((await db.joinToken.findUniqueOrThrow({ where: { id } })).labels).toEqual({ rack: 'c7', env: 'prod' });

    const bad = await cli([
      'join-tokens',
      'create',
      '--tenant',
      t.tenantId,
      '--pool',
      t.poolId,
      '--ttl',
      '1h',
      '--key',
      'l-2',
      '--label',
      'Rack=c7',
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/"Rack=c7" is not a label/);
    expect(await db.joinToken.count({ where: { tenantId: t.tenantId } })).toBe(1);

    const rule = await cli([
      'approval-rules',
      'create',
      '--tenant',
      t.tenantId,
      '--site',
      t.siteId,
      '--name',
      'r',
      '--action',
      'approve',
      '--pool',
      t.poolId,
      '--mac-prefix',
      randomMac(),
      '--label',
      'owner=team-a',
      '--json',
    ]);
    expect(rule).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(rule.stdout)).toMatchObject({ labels: { owner: 'team-a' } });
  });

  it('nodes label sets, overrides and removes labels', async () => {
    const nodeId = await insertKnownNode(t, { macs: [randomMac().replaceAll(':', '')] });
    const set = await cli(['nodes', 'label', nodeId, 'rack=c7', 'env=prod', '--tenant', t.tenantId]);
    expect(set).toMatchObject({ code: 0, stderr: '' });
    expect(set.stdout).toMatch(/rack\s+c7/);
    const changed = await cli(['nodes', 'label', nodeId, 'env=dev', '--remove', 'rack', '--tenant', t.tenantId, '--json']);
    expect(changed).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(changed.stdout)).toMatchObject({ id: nodeId, labels: { env: 'dev' } });
    expect((await db.node.findUniqueOrThrow({ where: { id: nodeId } })).labels).toEqual({ env: 'dev' });
    expect(await db.auditEntry.count({ where: { tenantId: t.tenantId, action: 'node.labels-changed' } })).toBe(2);
    expect((await cli(['nodes', 'label', nodeId, '--tenant', t.tenantId])).code).not.toBe(0);
  });
});

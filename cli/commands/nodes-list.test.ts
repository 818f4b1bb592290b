import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess, startCliApi, type ApiServer } from '../../test/cli';
import { parseCsv } from '../../test/csv';
import { testDb } from '../../test/db';
import { captureStderr, type TestTenant } from '../../test/fixtures';
import { newId } from '../../server/ids';

const db = testDb();
const stderr = captureStderr();
let api: ApiServer;
let t: TestTenant;
let env: Record<string, string>;
const ids: Record<string, string> = {};

const addNode = async (name: string, claims: object, labels: object) => {
  ids[name] = newId('node');
  await db.node.create({
    data: {
      id: ids[name],
      tenantId: t.tenantId,
      siteId: t.siteId,
      poolId: t.poolId,
      role: 'node',
      state: 'adopted',
      trust: 'tenant-controlled',
      attestor: 'join-token',
      claims,
      labels,
    },
  });
};

beforeAll(async () => {
  ({ api, t, env } = await startCliApi(db, { label: 'nodes-cli', role: 'operator' }));
  await addNode('gpu', { hostname: 'gpu-07', macs: ['3c:ec:ef:12:34:56'] }, { rack: 'c7' });
  await addNode('cpu', { hostname: '=cmd', macs: ['aa:bb:cc:dd:ee:ff'] }, { rack: 'c7', env: 'prod' });
  await addNode('other', { hostname: 'other' }, { rack: 'a1' });
});
afterAll(async () => {
  stderr.stop();
  await api?.close();
});

describe('better-compute nodes list and export', { timeout: 60_000 }, () => {
  it('searches and filters on the server, repeated --label, and prints the exact total', async () => {
    const mac = await runCliInProcess(['nodes', 'list', '--tenant', t.tenantId, '--search', '3C-EC-EF-12-34-56', '--json'], env);
    expect(mac.code, mac.stderr).toBe(0);
    const page = JSON.parse(mac.stdout) as { items: Array<{ id: string }>; total: number };
    expect(page.items.map((n) => n.id)).toEqual([ids.gpu]);
    expect(page.total).toBe(1);

    const labelled = await runCliInProcess(
      ['nodes', 'list', '--tenant', t.tenantId, '--label', 'rack=c7', '--label', 'env=prod', '--connected', 'no', '--pool', t.poolId],
      env,
    );
    expect(labelled.code, labelled.stderr).toBe(0);
    expect(labelled.stdout).toContain(ids.cpu);
    expect(labelled.stdout).not.toContain(ids.gpu);
    expect(labelled.stdout).toMatch(/^1 node matches$/m);

    const paged = await runCliInProcess(['nodes', 'list', '--tenant', t.tenantId, '--label', 'rack=c7', '--limit', '1'], env);
    expect(paged.stdout).toMatch(/^2 nodes match$/m);
    expect(paged.stdout).toMatch(/^More: --cursor node_/m);

    const bad = await runCliInProcess(['nodes', 'list', '--tenant', t.tenantId, '--label', 'rack'], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/key=value/);
  });

  it('exports the filtered nodes and the audit log as CSV files', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nodes-export-'));
    const file = join(dir, 'nodes.csv');
    const run = await runCliInProcess(['nodes', 'export', '--format', 'csv', '--label', 'rack=c7', '--output', file], env);
    expect(run.code, run.stderr).toBe(0);
    const [header, ...rows] = parseCsv(await readFile(file, 'utf8'));
    expect(rows.map((r) => r[0]).sort()).toEqual([ids.cpu, ids.gpu].sort());
    expect(rows.find((r) => r[0] === ids.cpu)![header!.indexOf('hostname')]).toBe("'=cmd");

    const refused = join(dir, 'refused.csv');
    const wrong = await runCliInProcess(['nodes', 'export', '--tenant', 'tnt_nope', '--output', refused], env);
    expect(wrong.code).not.toBe(0);
    await expect(stat(refused)).rejects.toThrow();

    await db.auditEntry.create({
      data: { tenantId: t.tenantId, actor: 'local:cli-test', action: 'node.cordoned', resource: `compute-node/${ids.gpu}`, data: {} },
    });
    const auditFile = join(dir, 'audit.csv');
    const audit = await runCliInProcess(['audit', 'export', '--actor-equals', 'local:cli-test', '--output', auditFile], env);
    expect(audit.code, audit.stderr).toBe(0);
    const auditRows = parseCsv(await readFile(auditFile, 'utf8'));
    expect(auditRows[0]![0]).toBe('time');
    expect(auditRows.slice(1).map((r) => r[4])).toEqual(['node.cordoned']);
  });
});

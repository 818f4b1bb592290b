import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess, startCliApi, type ApiServer } from '../../test/cli';
import { testDb } from '../../test/db';
import type { TestTenant } from '../../test/fixtures';

// `expected-machines import` takes a pool by name and says what it expected; `list --csv` writes values that a
// spreadsheet would run (= + - @ first) as text.

const db = testDb();
let api: ApiServer;
let t: TestTenant;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  ({ api, t, env } = await startCliApi(db, { label: 'expected-cli' }));
  dir = await mkdtemp(path.join(tmpdir(), 'expected-cli-'));
});
afterAll(async () => {
  await api?.close();
});

const site = () => ['--tenant', t.tenantId, '--site', t.siteId];

describe('better-compute expected-machines', { timeout: 120_000 }, () => {
  it('imports by pool name, and lists as CSV that a spreadsheet shows as text', async () => {
    const pool = await db.pool.findUniqueOrThrow({ where: { id: t.poolId } });
    const file = path.join(dir, 'expected.csv');
    await writeFile(
      file,
      [
        'serial,hostname,pool',
        `SN-CSV-1,"=HYPERLINK(""http://evil.example"",""x"")",${pool.name}`,
        `SN-CSV-2,+1,${pool.name}`,
        `SN-CSV-3,-2,${pool.name}`,
        `SN-CSV-4,@SUM(A1),${pool.name}`,
        `SN-CSV-5,plain-host,${t.poolId}`,
        'SN-CSV-6,other,rack-b',
      ].join('\n'),
    );
    const run = await runCliInProcess(['expected-machines', 'import', file, ...site()], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Imported 5 machines/);
    expect(run.stdout).toMatch(/pool: "rack-b" is not a pool of site .*; expected the name or id of a pool of this site that runs bcd/);

    const listed = await runCliInProcess(['expected-machines', 'list', ...site(), '--csv'], env);
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout.split('\r\n');
    expect(lines[0]).toBe('id,importId,serial,productUuid,mac,gpuUuid,pool,hostname,expiresAt,arrivedAt,requestId');
    const byHost = (serial: string) => lines.find((l) => l.includes(`,${serial},`))!;
    expect(byHost('sn-csv-1')).toContain(`,"'=HYPERLINK(""http://evil.example"",""x"")",`);
    expect(byHost('sn-csv-2')).toContain(`,"'+1",`);
    expect(byHost('sn-csv-3')).toContain(`,"'-2",`);
    expect(byHost('sn-csv-4')).toContain(`,"'@SUM(A1)",`);
    expect(byHost('sn-csv-5')).toContain(`,${t.poolId},plain-host,`);
    // No cell of the export starts a formula.
    for (const line of lines.slice(1).filter(Boolean)) for (const cell of line.split(',')) expect(cell).not.toMatch(/^[=+\-@]/);
  });
});

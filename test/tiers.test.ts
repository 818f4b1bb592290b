import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { tierProblems } from '../scripts/check-tiers.mjs';
import { classifyTests } from './tiers';

describe('test tiers', () => {
  it('vitest runs every *.test.ts of the tree in exactly one project', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['scripts/check-tiers.mjs']);
    expect(stdout).toMatch(/^Test tiers: \d+ files, each in one tier \(.*unit \d+.*\)\n$/);
    expect(stdout).toMatch(/integration \d+/);
    expect(stdout).toMatch(/soak \d+/);
  });

  it('names a file that no tier runs, one that two run, and one run from outside the tree', () => {
    const files = ['a.test.ts', 'b.test.ts', 'c.test.ts'];
    const runs = [
      { project: 'unit', file: 'a.test.ts' },
      { project: 'unit', file: 'b.test.ts' },
      { project: 'integration', file: 'b.test.ts' },
      { project: 'soak', file: 'gone.test.ts' },
    ];
    expect(tierProblems(files, runs)).toEqual([
      'gone.test.ts: run by soak but not a *.test.ts of the tree',
      'b.test.ts: in 2 tiers (unit, integration)',
      'c.test.ts: in no tier (vitest would never run it)',
    ]);
    expect(
      tierProblems(
        files,
        files.map((file) => ({ project: 'unit', file })),
      ),
    ).toEqual([]);
  });

  const dirs: string[] = [];
  afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

  it('puts a new file in integration when its imports reach the test database, soak by suffix, else unit', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'bc-tiers-'));
    dirs.push(root);
    const files: Record<string, string> = {
      'test/db.ts': "export const testDb = () => 'db';\n",
      'test/fixtures.ts': "export { testDb } from './db';\n",
      'server/a/helper.ts': "import { testDb } from '@/test/fixtures';\nexport const h = testDb;\n",
      'server/a/uses-db.test.ts': "import { h } from './helper';\n",
      'server/a/lazy-db.test.ts': "const m = await import('../../test/db');\n",
      'server/a/pure.test.ts': "import { x } from './pure';\nimport { it } from 'vitest';\n",
      'server/a/pure.ts': 'export const x = 1;\n',
      'server/a/load.soak.test.ts': "import { h } from './helper';\n",
      'node_modules/dep/dep.test.ts': '',
    };
    for (const [file, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(root, file)), { recursive: true });
      await writeFile(path.join(root, file), text);
    }
    expect(classifyTests(root)).toEqual({
      unit: ['server/a/pure.test.ts'],
      integration: ['server/a/lazy-db.test.ts', 'server/a/uses-db.test.ts'],
      soak: ['server/a/load.soak.test.ts'],
    });
  });
});

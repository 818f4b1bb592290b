import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findUnusedExports } from './unused-exports';

const root = path.resolve(import.meta.dirname, '..');

describe('unused exports', () => {
  const found = findUnusedExports(root);

  it('finds no exported name that no other file imports', () => {
    // Delete the export, or drop `export` when only its own file uses it.
    expect(found.map(({ file, line, name }) => `${file}:${line} ${name}`)).toEqual([]);
  });

  it('sees an unused export, a used one and the exempt ones', () => {
    const names = new Set(found.map(({ file, name }) => `${file} ${name}`));
    // Imported by other files: not reported.
    expect(names.has('protocol/der/reader.ts readRoot')).toBe(false);
    expect(names.has('server/error-map.ts ERROR_MAP')).toBe(false);
    // Next's conventions and tool configuration: exempt.
    expect(found.some(({ file }) => file.startsWith('app/') && /\/(page|layout|route)\.tsx?$/.test(file))).toBe(false);
    expect(found.some(({ file }) => file === 'vitest.config.ts' || file === 'playwright.config.ts')).toBe(false);
    // Loaded by vitest through its configuration's `globalSetup` path: used.
    expect(names.has('test/global-setup.ts default')).toBe(false);
  });

  it('reports, in a small tree, exactly the exports no other file uses', () => {
    const tree = mkdtempSync(path.join(tmpdir(), 'unused-exports-'));
    try {
      const write = (file: string, text: string) => {
        mkdirSync(path.dirname(path.join(tree, file)), { recursive: true });
        writeFileSync(path.join(tree, file), text);
      };
      for (const dir of ['bin', 'scripts', 'server']) mkdirSync(path.join(tree, dir));
      write(
        'lib/a.ts',
        'export const used = 1;\nexport const unused = 2;\nexport const onlyHere = 3;\nconst twice = onlyHere * 2;\nvoid twice;\n',
      );
      write('lib/b.ts', "import { used } from './a';\nexport default used;\n");
      write('lib/c.ts', 'export const loaded = 1;\n');
      write('lib/d.ts', "export const later = () => import('./c');\n");
      write('server/main.mjs', "import { later } from '../lib/d.ts';\nlater();\n");
      write('vitest.config.ts', "export default { test: { globalSetup: ['./test/setup.ts'] } };\n");
      write('test/setup.ts', 'export default async function setup() {}\nexport const teardown = () => {};\n');
      write('app/x/page.tsx', 'export default function Page() {\n  return null;\n}\n');
      const found = findUnusedExports(tree).map(({ file, line, name }) => `${file}:${line} ${name}`);
      expect(found).toEqual(['lib/a.ts:2 unused', 'lib/a.ts:3 onlyHere', 'lib/b.ts:2 default']);
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });
});

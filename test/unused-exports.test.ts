import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findUnusedExports } from './unused-exports';

const root = path.resolve(import.meta.dirname, '..');
const known = new Set(
  readFileSync(path.join(import.meta.dirname, 'unused-exports-known.txt'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#')),
);

describe('unused exports', () => {
  const found = findUnusedExports(root);

  it('adds no exported name that no other file imports', () => {
    const fresh = found.filter(({ file, name }) => !known.has(`${file} ${name}`)).map(({ file, line, name }) => `${file}:${line} ${name}`);
    // Delete the export, or drop `export` when only its own file uses it.
    expect(fresh).toEqual([]);
  });

  it('keeps the list of known ones current (a name now imported, or deleted, leaves the list)', () => {
    const current = new Set(found.map(({ file, name }) => `${file} ${name}`));
    expect([...known].filter((entry) => !current.has(entry))).toEqual([]);
  });

  it('sees an unused export, a used one and the exempt ones', () => {
    const names = new Set(found.map(({ file, name }) => `${file} ${name}`));
    // Imported by other files: not reported.
    expect(names.has('protocol/der/reader.ts readRoot')).toBe(false);
    expect(names.has('server/error-map.ts ERROR_MAP')).toBe(false);
    // Next's conventions and tool configuration: exempt.
    expect(found.some(({ file }) => file.startsWith('app/') && /\/(page|layout|route)\.tsx?$/.test(file))).toBe(false);
    expect(found.some(({ file }) => file === 'vitest.config.ts' || file === 'playwright.config.ts')).toBe(false);
    // Exported, imported by no other file (its own file uses it): reported.
    expect(names.has('protocol/der/reader.ts MAX_DER_DEPTH')).toBe(true);
  });
});

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The product's code: what `npm start`, the CLI and bcd run. Tests, harnesses and benchmarks are not. */
const PRODUCTION = ['app', 'server', 'lib', 'components', 'cli', 'agent'];
const SKIPPED = new Set(['node_modules', 'generated']);
const SPECIFIER = /^\s*(?:import|export)\b[^;'"]*?(?:\bfrom\s*)?['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]/gm;

function productionFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      if (!SKIPPED.has(entry.name)) found.push(...productionFiles(rel));
    } else if (/\.(ts|tsx|mts)$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) {
      found.push(rel);
    }
  }
  return found;
}

/** Every import of `file`, as the repository path it names (relative and `@/` ones) or the package name. */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  return [...text.matchAll(SPECIFIER)].map((m) => {
    const spec = (m[1] ?? m[2])!;
    if (spec.startsWith('@/')) return spec.slice(2);
    if (spec.startsWith('.')) return path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
    return spec;
  });
}

describe('production imports', () => {
  const files = PRODUCTION.flatMap(productionFiles);

  it('finds the production code', () => {
    expect(files).toContain('server/boot/main.ts');
    expect(files).toContain('server/pki/issuance/node-certificate.ts');
  });

  it('keeps test helpers out of production code: nothing there imports test/ (PKI fixtures, openssl, x509 parsing)', () => {
    const offending = files.flatMap((file) =>
      importsOf(file)
        .filter((target) => target === 'test' || target.startsWith('test/'))
        .map((target) => `${file} -> ${target}`),
    );
    expect(offending).toEqual([]);
  });

  it('keeps @peculiar/x509 a test-only reader: production code builds and parses certificates with its own DER', () => {
    const offending = files.flatMap((file) =>
      importsOf(file)
        .filter((target) => target.startsWith('@peculiar/x509'))
        .map((target) => `${file} -> ${target}`),
    );
    expect(offending).toEqual([]);
  });
});

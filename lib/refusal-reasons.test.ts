import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { explainRefusal, REFUSAL_REASONS } from './refusal-reasons';

const tableRows = (text: string) => text.split('\n').filter((line) => line.startsWith('| `'));

const sources = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return sources(file);
    return file.endsWith('.ts') && !file.endsWith('.test.ts') ? [readFileSync(file, 'utf8')] : [];
  });

/**
 * The reasons the join code can record: every literal `reason: '<prefix>:…'` and `refuse('<prefix>:…')`, and
 * the token rules every token-carrying attestor applies (`checkToken('<attestor>', …)` refusing
 * `${attestor}:<rule>`), one reason per attestor and rule.
 */
function reasonsInServer(dir: string): Set<string> {
  const found = new Set<string>();
  const texts = sources(dir);
  const attestors = new Set<string>();
  const tokenRules = new Set<string>();
  for (const text of texts) {
    for (const match of text.matchAll(/(?:reason: |refuse\(|JoinRefusal\()'((?:join|join-token|discovery|x509pop):[a-z-]+)'/g))
      found.add(match[1]!);
    for (const match of text.matchAll(/checkToken\('([a-z-]+)'/g)) attestors.add(match[1]!);
    for (const match of text.matchAll(/refuse\(`\$\{attestor\}:([a-z-]+)`/g)) tokenRules.add(match[1]!);
  }
  expect(attestors.size, 'attestors calling checkToken').toBeGreaterThan(1);
  expect(tokenRules.size, 'token rules of checkToken').toBeGreaterThan(4);
  for (const attestor of attestors) for (const rule of tokenRules) found.add(`${attestor}:${rule}`);
  return found;
}

describe('refusal reasons', () => {
  it('explain every reason the join code can record', () => {
    const server = reasonsInServer(path.resolve(__dirname, '../server/join'));
    expect(server.size).toBeGreaterThan(10);
    const missing = [...server].filter((reason) => !(reason in REFUSAL_REASONS));
    expect(missing).toEqual([]);
  });

  it('cover the spec’s refusals table', () => {
    // The table's rows, kept in the repository (test/spec/refusals-table.md): the spec lives outside it, at
    // ../shared/spec/joining.md, and a checkout may not have it. Where it does, the copy must be current.
    const copy = readFileSync(path.resolve(__dirname, '../test/spec/refusals-table.md'), 'utf8');
    const specFile = path.resolve(__dirname, '../../shared/spec/joining.md');
    if (existsSync(specFile)) {
      const spec = readFileSync(specFile, 'utf8');
      const table = spec.slice(spec.indexOf('### Refusals'), spec.indexOf('Two failures are not refusals'));
      expect(copy.trim()).toBe(tableRows(table).join('\n'));
    }
    const rows = tableRows(copy);
    expect(rows.length).toBeGreaterThan(5);
    // Rows list `prefix:first`, then bare siblings (`unknown`, `secret-mismatch`) of the same prefix.
    for (const row of rows) {
      const cell = row.split('|')[1]!;
      const names = [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
      const prefix = names[0]!.split(':')[0]!;
      for (const name of names) expect(REFUSAL_REASONS, name).toHaveProperty([name.includes(':') ? name : `${prefix}:${name}`]);
    }
  });

  it('still says something for a reason it does not know', () => {
    expect(explainRefusal('tpm:quote').meaning).toMatch(/does not know/);
    expect(explainRefusal('join-token:revoked').action).toMatch(/new token/);
  });
});

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

const PREFIXES = '(?:join|join-token|discovery|x509pop|tpm)';

/**
 * The reasons the server can record, collected from its sources as the event-types test collects event types:
 * - every literal `'<prefix>:<rule>'` (quoted or in backticks, code or TSDoc naming what a path refuses), for
 *   the prefixes `join`, `join-token`, `discovery`, `x509pop` and `tpm`;
 * - `<prefix>:${name}-<rule>` templates, once per value of the string union the same file gives `name`
 *   (the TPM's `tpm:${who}-fixed-tpm` for `who: 'ak' | 'node-key'`);
 * - the rules a token-carrying attestor applies through `checkToken('<attestor>', …)` (and any other
 *   `${attestor}:<rule>` template), once per such attestor.
 */
function reasonsInServer(dir: string): Set<string> {
  const found = new Set<string>();
  const texts = sources(dir);
  const attestors = new Set<string>();
  const tokenRules = new Set<string>();
  for (const text of texts) {
    for (const match of text.matchAll(new RegExp(`['\`](${PREFIXES}:[a-z][a-z-]*[a-z])['\`]`, 'g'))) found.add(match[1]!);
    for (const match of text.matchAll(new RegExp(`\`(${PREFIXES}):\\$\\{(\\w+)\\}([a-z-]*)\``, 'g'))) {
      const [, prefix, name, rest] = match;
      const union = new RegExp(`\\b${name}: ((?:'[a-z-]+'(?: \\| )?)+)`).exec(text);
      expect(union, `the values of ${name} in ${match[0]}`).not.toBeNull();
      for (const value of union![1]!.matchAll(/'([a-z-]+)'/g)) found.add(`${prefix}:${value[1]}${rest}`);
    }
    for (const match of text.matchAll(/checkToken\('([a-z-]+)'/g)) attestors.add(match[1]!);
    for (const match of text.matchAll(/`\$\{attestor\}:([a-z-]+)`/g)) tokenRules.add(match[1]!);
  }
  expect(attestors.size, 'attestors calling checkToken').toBeGreaterThan(1);
  expect(tokenRules.size, 'token rules of checkToken').toBeGreaterThan(4);
  for (const attestor of attestors) for (const rule of tokenRules) found.add(`${attestor}:${rule}`);
  return found;
}

describe('refusal reasons', () => {
  it('explain every reason the server can record, for every attestor', () => {
    const server = reasonsInServer(path.resolve(__dirname, '../server'));
    for (const prefix of ['join', 'join-token', 'discovery', 'x509pop', 'tpm'])
      expect([...server].filter((reason) => reason.startsWith(`${prefix}:`)).length, prefix).toBeGreaterThan(3);
    expect(server).toContain('tpm:ak-fixed-tpm');
    expect(server).toContain('tpm:node-key-sensitive-data-origin');
    const unexplained = [...server].filter((reason) => /does not know/.test(explainRefusal(reason).meaning)).sort();
    expect(unexplained).toEqual([]);
  });

  it('explain the admission rules every deferring attestor shares, whatever the attestor', () => {
    for (const reason of [
      'discovery:queue-full',
      'tpm:queue-full',
      'discovery:rate-limited',
      'tpm:rate-limited',
      'tpm:enrollment-off',
      'tpm:claims',
      'discovery:claims-too-large',
      'tpm:claims-malformed',
    ])
      expect(explainRefusal(reason).meaning, reason).not.toMatch(/does not know/);
    expect(explainRefusal('tpm:queue-full').meaning).toMatch(/queue is full/);
    expect(explainRefusal('tpm:rate-limited').action).toMatch(/ask again/);
    expect(explainRefusal('nothing:queue-full').meaning).toMatch(/does not know/);
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
    expect(explainRefusal('tpm:ak-restricted').meaning).not.toMatch(/does not know/);
    expect(explainRefusal('join-token:revoked').action).toMatch(/new token/);
  });
});

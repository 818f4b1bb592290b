import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { explainRefusal, REFUSAL_REASONS } from './refusal-reasons';

/** Every `reason: 'join…:…'` and `refuse('join…:…')` in the join code: the reasons the server can record. */
function reasonsInServer(dir: string): Set<string> {
  const found = new Set<string>();
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) {
      for (const reason of reasonsInServer(file)) found.add(reason);
    } else if (file.endsWith('.ts') && !file.endsWith('.test.ts')) {
      for (const match of readFileSync(file, 'utf8').matchAll(/(?:reason: |refuse\()'(join(?:-token)?:[a-z-]+)'/g)) found.add(match[1]!);
    }
  }
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
    const spec = readFileSync(path.resolve(__dirname, '../../shared/spec/joining.md'), 'utf8');
    const table = spec.slice(spec.indexOf('### Refusals'), spec.indexOf('Two failures are not refusals'));
    // Rows list `prefix:first`, then bare siblings (`unknown`, `secret-mismatch`) of the same prefix.
    for (const row of table.split('\n').filter((line) => line.startsWith('| `'))) {
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

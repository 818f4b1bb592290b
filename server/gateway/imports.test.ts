import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '../..');

/** Every project file the gateway's modules import, transitively (relative imports only). */
function importGraph(entries: string[]): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    for (const match of source.matchAll(/from '(\.[^']+)'/g)) {
      const base = path.resolve(path.dirname(file), match[1]!);
      for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) {
        try {
          readFileSync(candidate);
          visit(candidate);
          break;
        } catch {
          // not this candidate
        }
      }
    }
  };
  entries.forEach(visit);
  return seen;
}

describe('the gateway cannot sign for JoinService', () => {
  it('imports nothing that opens the PKI, seals, issues certificates or signs answers', () => {
    const dir = path.join(ROOT, 'server/gateway');
    const entries = readdirSync(dir)
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .map((f) => path.join(dir, f));
    const graph = [...importGraph(entries)].map((f) => path.relative(ROOT, f));
    const forbidden = graph.filter((f) =>
      /server\/(pki\/(store|bundle|join-crypto|node-certificate|ca|issuing-ca|bundle-seal)|join\/|renew\/renew-service|db\/)/.test(f),
    );
    expect(forbidden).toEqual([]);
    expect(graph).toContain('server/vouching/vouch.ts');
  });
});

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findLayeringViolations } from './layering';

const ROOT = path.resolve(__dirname, '..');

describe('the layering of the tree (test/layering.ts)', () => {
  it('holds for every TS/TSX file', () => {
    expect(findLayeringViolations(ROOT)).toEqual([]);
  });
});

describe('the layering check', () => {
  const planted = mkdtempSync(path.join(tmpdir(), 'bc-layering-'));
  afterAll(() => rmSync(planted, { recursive: true, force: true }));
  const plant = (files: Record<string, string>) => {
    for (const [file, source] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(planted, file)), { recursive: true });
      writeFileSync(path.join(planted, file), source);
    }
  };
  plant({
    'server/db.ts': `export const db = 1;\nexport type Db = number;\n`,
    'server/api/router.ts': `import { initTRPC } from '@trpc/server';\nexport const t = initTRPC;\n`,
    'server/boot.ts': `import { db } from './db';\nimport next from 'next';\nexport const b = [db, next];\n`,
    'server/uses-agent.ts': `export async function f() {\n  return import('../agent/key');\n}\n`,
    'server/uses-agent.test.ts': `import { key } from '../agent/key';\nexport const k = key;\n`,
    'agent/key.ts': `// import { db } from '../server/db';\nconst s = "import { db } from '../server/db'";\nexport const key = s;\n`,
    'agent/re-export.ts': `export { db } from '@/server/db';\n`,
    'protocol/wire.ts': `import type { Db } from '../server/db';\nimport { z } from 'react';\nexport type W = Db;\nexport const r = z;\n`,
    'protocol/fine.ts': `import { createHash } from 'node:crypto';\nimport { wire } from './wire-two';\nexport const h = [createHash, wire];\n`,
    'protocol/wire-two.ts': `export const wire = 2;\n`,
    'lib/types.ts': `import type { Db } from '@/server/db';\nimport { type Db as D2 } from '../server/db';\nexport type T = Db | D2;\n`,
    'lib/values.ts': `import { db } from '@/server/db';\nexport const v = db;\n`,
    'lib/bridge.ts': `import { secret } from './secret';\nexport const b = secret;\n`,
    'lib/secret.ts': `import 'server-only';\nexport const secret = 1;\n`,
    'components/view.tsx': `'use client';\nimport { b } from '@/lib/bridge';\nimport type { T } from '@/lib/types';\nexport const V = (t: T) => b + t;\n`,
    'components/server-view.tsx': `import { b } from '@/lib/bridge';\nexport const S = () => b;\n`,
  });

  it('names each violating import with its file and line, and nothing else', () => {
    expect(findLayeringViolations(planted, []).sort()).toEqual(
      [
        "agent/re-export.ts:1 imports '@/server/db': agent/ imports nothing of server/ (shared code lives in protocol/)",
        "lib/values.ts:1 imports '@/server/db': lib/ imports server/ for types only (import type)",
        "protocol/wire.ts:1 imports '../server/db': protocol/ imports nothing of server/",
        "protocol/wire.ts:2 imports 'react': protocol/ imports no framework or Prisma",
        "server/boot.ts:2 imports 'next': server/ (outside server/api) imports no next/*, @trpc/* or react",
        "server/uses-agent.ts:2 imports '../agent/key': server/ imports nothing of agent/ (shared code lives in protocol/)",
        "lib/bridge.ts:1 imports './secret': client code (components/view.tsx → lib/bridge.ts) reaches server-only lib/secret.ts",
      ].sort(),
    );
  });

  it('leaves out a listed exception', () => {
    const violations = findLayeringViolations(planted, [{ file: 'server/boot.ts', target: 'next', reason: 'test' }]);
    expect(violations.some((v) => v.startsWith('server/boot.ts'))).toBe(false);
    expect(violations).toHaveLength(6);
  });
});

describe('the attestor rule', () => {
  const planted = mkdtempSync(path.join(tmpdir(), 'bc-layering-attestors-'));
  afterAll(() => rmSync(planted, { recursive: true, force: true }));
  const files: Record<string, string> = {
    'server/join/attestors/types.ts': `export type Attestor = { name: string };\n`,
    'server/join/attestors/registry.ts': `export const attestorNamed = (name: string) => name;\n`,
    'server/join/attestors/index.ts': `import { tpm } from './tpm/attestor';\nimport { fake } from './fake';\nexport const all = [tpm, fake];\n`,
    'server/join/attestors/tpm/attestor.ts': `import { parse } from './parse';\nexport const tpm = parse;\n`,
    'server/join/attestors/tpm/parse.ts': `export const parse = 1;\n`,
    'server/join/attestors/fake.ts': `import type { Attestor } from './types';\nexport const fake: Attestor = { name: 'fake' };\n`,
    'server/join/attestors/fake.test.ts': `import { fake } from './fake';\nexport const f = fake;\n`,
    'server/join/attestors/x509pop/x509pop.ts': `import { parse } from '../tpm/parse';\nimport { attestorNamed } from '../registry';\nexport const x = [parse, attestorNamed];\n`,
    'server/renew/renew.ts': `import { parse } from '../join/attestors/tpm/parse';\nimport { all } from '../join/attestors';\nexport const r = [parse, all];\n`,
    'server/sites/sites.test.ts': `import type { fake } from '@/server/join/attestors/fake';\nexport type F = typeof fake;\n`,
  };
  for (const [file, source] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(planted, file)), { recursive: true });
    writeFileSync(path.join(planted, file), source);
  }

  it('lets only the attestor itself and the registry import its files', () => {
    const rule = 'attestor is imported only by its own files and the registry (server/join/attestors/index.ts)';
    expect(findLayeringViolations(planted, []).sort()).toEqual(
      [
        `server/join/attestors/x509pop/x509pop.ts:1 imports '../tpm/parse': the tpm ${rule}`,
        `server/renew/renew.ts:1 imports '../join/attestors/tpm/parse': the tpm ${rule}`,
        `server/sites/sites.test.ts:1 imports '@/server/join/attestors/fake': the fake ${rule}`,
      ].sort(),
    );
  });
});

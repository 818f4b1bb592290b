import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// serve.ts is bundled into the tRPC route (downloadsDir), where Turbopack traces file-system calls and warns
// about every one whose path it cannot bound. Its paths are runtime values by design (the downloads
// directory), so each call marks its path argument as one Turbopack must not trace.
const source = readFileSync(new URL('./serve.ts', import.meta.url), 'utf8');
const FS_CALL = /\b(createReadStream|stat|lstat|readFile|readdir|open|access)\(([^)]*)/g;

describe('serve.ts under Turbopack', () => {
  it('marks the path of every file-system call with turbopackIgnore', () => {
    const calls = [...source.matchAll(FS_CALL)].map((m) => ({ call: m[1], args: m[2]! }));
    expect(calls.length).toBeGreaterThanOrEqual(3);
    for (const { call, args } of calls) expect(`${call}(${args}`).toMatch(/\(\/\* turbopackIgnore: true \*\/ /);
  });
});

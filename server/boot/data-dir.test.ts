import { mkdtemp, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { localSecret } from './data-dir';

describe('secrets kept in the data directory', () => {
  it('are generated once, 0600, and the same after a restart (so console sessions survive it)', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'bc-data-'));
    const first = await localSecret(dir, 'nextauth-secret');
    expect(first.generated).toBe(true);
    expect(first.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await stat(path.join(dir, 'nextauth-secret'))).mode & 0o777).toBe(0o600);
    const again = await localSecret(dir, 'nextauth-secret');
    expect(again).toEqual({ value: first.value, generated: false });
    expect((await localSecret(dir, 'secret')).value).not.toBe(first.value);
  });
});

import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCliApi, type ApiServer } from '../../test/cli';
import { testDatabaseUrl, testDb } from '../../test/db';
import type { TestTenant } from '../../test/fixtures';
import { newId } from '../../server/ids';

const db = testDb();
let api: ApiServer;
let t: TestTenant;
let env: Record<string, string>;

beforeAll(async () => {
  process.env.DATABASE_URL = testDatabaseUrl();
  ({ api, t, env } = await startCliApi(db, { label: 'json-cli' }));
});
afterAll(async () => {
  await api?.close();
});

describe('better-compute --json into a pipe', { timeout: 120_000 }, () => {
  it('writes an answer larger than the pipe buffers completely before it exits', async () => {
    // 1,500 live tokens list as about 600 KB of pretty-printed JSON: several times what a pipe holds at once.
    const expiresAt = new Date(Date.now() + 3_600_000);
    await db.joinToken.createMany({
      data: Array.from({ length: 1500 }, (_, i) => ({
        id: newId('jt'),
        tenantId: t.tenantId,
        poolId: t.poolId,
        siteId: t.siteId,
        role: 'node',
        secretHash: randomBytes(32),
        maxUses: 10,
        usesLeft: 10,
        expect: { serial: `SN-${String(i).padStart(6, '0')}` },
        expiresAt,
        createdBy: 'test',
      })),
    });
    // runCli reads the child's stdout through a pipe, as `| jq` would.
    const run = await runCli(['join-tokens', 'list', '--tenant', t.tenantId, '--pool', t.poolId, '--json'], env);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(Buffer.byteLength(run.stdout)).toBeGreaterThan(256 * 1024);
    const listed = JSON.parse(run.stdout) as { id: string }[];
    expect(listed).toHaveLength(1500);
    expect(new Set(listed.map((token) => token.id)).size).toBe(1500);
  });
});

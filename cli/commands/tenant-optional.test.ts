import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess as runCli, startCliApi, type ApiServer } from '../../test/cli';
import { createMigratedDatabase, dropDatabase } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { createDb, type Db } from '../../server/db/client';
import { initPki } from '../../server/pki/bundle/store';

// The install script embeds the PKI's pins and the bundle is a singleton row: a database of this file's own.
const name = `cli_tenant_optional_${randomBytes(4).toString('hex')}`;
const secret = 'a-long-enough-test-secret-0123456789-tenant-opt';
let db: Db;
let api: ApiServer;
let t: TestTenant;
let other: TestTenant;
let env: Record<string, string>;

beforeAll(async () => {
  const url = await createMigratedDatabase(name);
  db = createDb(url, { max: 4 });
  await initPki(db, { trustDomain: 'compute.example.com', secret });
  process.env.BETTER_COMPUTE_SECRET = secret;
  ({ api, t, env } = await startCliApi(db, { label: 'opt', role: 'operator' }));
  other = await createTestTenant(db, { label: 'opt-other' });
}, 180_000);
afterAll(async () => {
  await api?.close();
  await db?.$disconnect();
  await dropDatabase(name);
});

const amd64 = 'a'.repeat(64);
const arm64 = 'b'.repeat(64);

describe('commands whose pool, site or id implies the tenant take no --tenant', { timeout: 120_000 }, () => {
  it('daemon install-script runs exactly as joining.md writes it (--pool --site, no --tenant)', async () => {
    const run = await runCli(
      [
        'daemon',
        'install-script',
        '--pool',
        t.poolId,
        '--site',
        t.siteId,
        '--gateway-url',
        'https://gw.eu.example.com',
        '--base-url',
        'https://compute.example.com',
        '--bcd-version',
        '0.1.0',
        '--sha256',
        `amd64=${amd64},arm64=${arm64}`,
      ],
      env,
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^#!\/bin\/sh/);
    expect(run.stdout).toContain(`pool ${t.poolId} (site ${t.siteId})`);
    expect(run.stdout).toContain(`SHA256_ARM64='${arm64}'`);
  });

  it('lists, reads and acts by pool, site or id without --tenant, and still takes --tenant', async () => {
    const tokens = await runCli(['join-tokens', 'list', '--pool', t.poolId, '--json'], env);
    expect(tokens.stderr).toBe('');
    expect(JSON.parse(tokens.stdout)).toEqual([]);
    const requests = await runCli(['join-requests', 'list', '--pool', t.poolId, '--json'], env);
    expect(requests.stderr).toBe('');
    expect(JSON.parse(requests.stdout)).toEqual([]);
    const pool = await runCli(['pools', 'get', t.poolId, '--json'], env);
    expect(pool.stderr).toBe('');
    expect(JSON.parse(pool.stdout)).toMatchObject({ id: t.poolId, tenantId: t.tenantId });
    const named = await runCli(['pools', 'get', t.poolId, '--tenant', t.name, '--json'], env);
    expect(JSON.parse(named.stdout)).toMatchObject({ id: t.poolId });
  });

  it("keeps another tenant's pool NOT_FOUND", async () => {
    const run = await runCli(['join-tokens', 'list', '--pool', other.poolId, '--json'], env);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/NOT_FOUND/);
  });
});

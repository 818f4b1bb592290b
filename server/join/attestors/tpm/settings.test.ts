import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertApiKey } from '../../../api-keys/api-keys';
import { createCaller } from '../../../api/root';
import { toDomainError } from '../../../api/trpc';
import { runCliInProcess, startApiServer, type ApiServer } from '../../../../test/cli';
import { testDb } from '../../../../test/db';
import { createTestTenant, type TestTenant } from '../../../../test/fixtures';
import { editAllowList, tpmSiteSettings } from './settings';

const EK1 = 'a'.repeat(64);
const EK2 = 'B'.repeat(64);

let t: TestTenant;
let api: ApiServer;
let apiKey: string;

beforeAll(async () => {
  t = await createTestTenant(testDb(), { label: 'tpm-settings' });
  apiKey = (await insertApiKey(testDb(), { tenantId: t.tenantId, role: 'admin', name: 'tpm settings test' }, 'test')).key;
  api = await startApiServer(testDb());
});
afterAll(async () => {
  await api?.close();
});

async function domainError(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).not.toBeNull();
  return toDomainError(error)!;
}

describe('the tpm attestor settings', () => {
  it('defaults: enrollment off, a day to wait, nothing listed; an unreadable value reads as the defaults', () => {
    expect(tpmSiteSettings({})).toEqual({ enrollment: false, pendingTtlSeconds: 86_400, ekAllowList: [] });
    expect(tpmSiteSettings({ enrollment: 'yes' })).toEqual({ enrollment: false, pendingTtlSeconds: 86_400, ekAllowList: [] });
    expect(tpmSiteSettings({ enrollment: true })).toEqual({ enrollment: true, pendingTtlSeconds: 86_400, ekAllowList: [] });
    expect(editAllowList(['x', 'y'], ['y', 'z', 'z'], ['x'])).toEqual(['y', 'z']);
  });

  it("sites.update edits a site's enrollment and EK allow-list, audited by the hashes changed", async () => {
    const caller = createCaller({ db: testDb(), principal: t.admin });
    expect((await caller.sites.get({ tenantId: t.tenantId, siteId: t.site.id })).tpm).toEqual({
      enrollment: false,
      pendingTtlSeconds: 86_400,
      ekAllowList: [],
    });
    const updated = await caller.sites.update({
      tenantId: t.tenantId,
      siteId: t.site.id,
      tpm: { enrollment: true, addEkHashes: [EK1, EK2] },
    });
    // Hashes are stored lower case, each once; the discovery settings are untouched.
    expect(updated.tpm).toEqual({ enrollment: true, pendingTtlSeconds: 86_400, ekAllowList: [EK1, EK2.toLowerCase()] });
    expect(updated.discovery.approval).toBe('unknown-machines');
    const removed = await caller.sites.update({ tenantId: t.tenantId, siteId: t.site.id, tpm: { removeEkHashes: [EK1] } });
    expect(removed.tpm).toEqual({ enrollment: true, pendingTtlSeconds: 86_400, ekAllowList: [EK2.toLowerCase()] });
    const bad = await domainError(caller.sites.update({ tenantId: t.tenantId, siteId: t.site.id, tpm: { addEkHashes: ['sha256/abc'] } }));
    expect(bad).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'tpm.addEkHashes.0' });
    const audit = await testDb().auditEntry.findMany({ where: { tenantId: t.tenantId, action: 'site.updated' }, orderBy: { id: 'asc' } });
    expect(audit.map((a) => (a.data as { tpm: unknown }).tpm)).toEqual([
      { enrollment: true, pendingTtlSeconds: 86_400, addEkHashes: [EK1, EK2.toLowerCase()], removeEkHashes: [] },
      { enrollment: true, pendingTtlSeconds: 86_400, addEkHashes: [], removeEkHashes: [EK1] },
    ]);
  });

  it('a site updated for anything else stores no tpm default: its enrollment follows the default (off)', async () => {
    const other = await createTestTenant(testDb(), { label: 'tpm-settings-implicit' });
    const caller = createCaller({ db: testDb(), principal: other.admin });
    await caller.sites.update({ tenantId: other.tenantId, siteId: other.site.id, discovery: { maxPendingRequests: 50 } });
    const row = await testDb().site.findUniqueOrThrow({ where: { id: other.site.id } });
    expect(row.tpm).toEqual({ ekAllowList: [] });
    expect((await caller.sites.get({ tenantId: other.tenantId, siteId: other.site.id })).tpm.enrollment).toBe(false);
    await caller.sites.update({ tenantId: other.tenantId, siteId: other.site.id, tpm: { enrollment: true } });
    await caller.sites.update({ tenantId: other.tenantId, siteId: other.site.id, discovery: { maxPendingRequests: 60 } });
    // An explicit setting is kept by later updates of other settings.
    expect((await testDb().site.findUniqueOrThrow({ where: { id: other.site.id } })).tpm).toEqual({ enrollment: true, ekAllowList: [] });
  });

  it("pools.update edits a pool's policy.tpm.ekAllowList and keeps the rest of its policy", async () => {
    const caller = createCaller({ db: testDb(), principal: t.admin });
    const pool = await caller.pools.create({
      tenantId: t.tenantId,
      siteId: t.site.id,
      name: 'tpm-pool',
      agent: 'bcd',
      policy: { joinAttestors: ['tpm'] },
    });
    const updated = await caller.pools.update({ tenantId: t.tenantId, poolId: pool.id, tpm: { addEkHashes: [EK1] } });
    expect(updated.policy).toEqual({ joinAttestors: ['tpm'], tpm: { ekAllowList: [EK1] } });
    expect((await caller.pools.get({ tenantId: t.tenantId, poolId: pool.id })).policy.tpm).toEqual({ ekAllowList: [EK1] });
    await caller.pools.archive({ tenantId: t.tenantId, poolId: pool.id });
    expect(await domainError(caller.pools.update({ tenantId: t.tenantId, poolId: pool.id, tpm: { removeEkHashes: [EK1] } }))).toMatchObject(
      { code: 'INVALID_STATE' },
    );
  });

  it('the CLI edits both through REST', async () => {
    const env = { BETTER_COMPUTE_URL: api.url, BETTER_COMPUTE_API_KEY: apiKey };
    const site = await runCliInProcess(
      ['sites', 'update', t.site.id, '--tpm-enrollment', 'on', '--tpm-allow-ek', EK1, '--tpm-pending-ttl', '3600'],
      env,
    );
    expect(site.code, site.stderr).toBe(0);
    expect(site.stdout).toContain('tpm: enrollment on (unlisted TPMs wait in the queue), requests wait 3600 s, 2 EK hash(es) allowed');
    const off = await runCliInProcess(['sites', 'update', t.site.id, '--tpm-enrollment', 'off'], env);
    expect(off.stdout).toContain('tpm: enrollment off (unlisted TPMs are refused)');
    const shown = await runCliInProcess(['sites', 'get', t.site.id], env);
    expect(shown.stdout).toMatch(/TPM ENROLLMENT[\s\S]*\soff\s/);
    const help = await runCliInProcess(['sites', 'update', '--help'], env);
    expect(help.stdout).toContain('off (the default)');
    const pool = await runCliInProcess(['pools', 'update', t.poolId, '--tpm-allow-ek', EK2, '--tpm-allow-ek', EK1, '--json'], env);
    expect(pool.code, pool.stderr).toBe(0);
    expect(JSON.parse(pool.stdout).policy.tpm).toEqual({ ekAllowList: [EK2.toLowerCase(), EK1] });
    const refused = await runCliInProcess(['pools', 'update', t.poolId, '--tpm-allow-ek', 'not-a-hash'], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('64 hex digits');
  });
});

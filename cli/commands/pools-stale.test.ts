import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess, startCliApi, type ApiServer } from '../../test/cli';
import { testDb } from '../../test/db';
import { captureStderr, type TestTenant } from '../../test/fixtures';
import { DAY, insertNode } from '../../test/stale-nodes';

const db = testDb();
const stderr = captureStderr();
let api: ApiServer;
let t: TestTenant;
let env: Record<string, string>;

beforeAll(async () => {
  ({ api, t, env } = await startCliApi(db, { label: 'stale-cli' }));
});
afterAll(async () => {
  stderr.stop();
  await api?.close();
});

const cli = (...args: string[]) => runCliInProcess(['pools', ...args, '--tenant', t.tenantId], env);

describe('better-compute pools stale-policy and stale-nodes', { timeout: 60_000 }, () => {
  it('sets the policy, lists what it would do with --dry-run (changing nothing), applies it, and turns it off', async () => {
    const long = await insertNode(db, t, t.poolId, new Date(Date.now() - 30 * DAY), { hostname: 'rack7-node3' });
    const recent = await insertNode(db, t, t.poolId, new Date(Date.now() - DAY));

    const none = await cli('stale-nodes', t.poolId, '--dry-run');
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toContain('has no stale-node policy');

    const set = await cli('stale-policy', t.poolId, '--cordon-after-days', '7', '--retire-after-days', '14');
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain('disconnected 7 days are cordoned, and retired 14 days later');
    expect((await db.pool.findUniqueOrThrow({ where: { id: t.poolId } })).policy).toMatchObject({
      staleNodes: { cordonAfterDays: 7, retireAfterDays: 14 },
    });

    const dry = await cli('stale-nodes', t.poolId, '--dry-run');
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/would retire 0, cordon 1/);
    expect(dry.stdout).toContain(long.id);
    expect(dry.stdout).toContain('rack7-node3');
    expect(dry.stdout).not.toContain(recent.id);
    const json = await cli('stale-nodes', t.poolId, '--dry-run', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ counts: { cordon: 1, retire: 0 }, items: [{ nodeId: long.id, action: 'cordon' }] });
    expect(await db.node.findUniqueOrThrow({ where: { id: long.id } })).toMatchObject({ cordoned: false });

    const applied = await cli('stale-nodes', t.poolId);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain('cordoned 1, retired 0');
    expect(await db.node.findUniqueOrThrow({ where: { id: long.id } })).toMatchObject({ cordoned: true });
    expect(await db.node.findUniqueOrThrow({ where: { id: recent.id } })).toMatchObject({ cordoned: false });
    expect(api.requests.some((r) => r.startsWith('POST ') && r.includes('/stale-nodes/apply'))).toBe(true);

    const off = await cli('stale-policy', t.poolId, '--off');
    expect(off.code, off.stderr).toBe(0);
    expect((await db.pool.findUniqueOrThrow({ where: { id: t.poolId } })).policy).not.toHaveProperty('staleNodes');
  });

  it('refuses days out of bounds and a half-given policy before sending anything', async () => {
    const before = api.requests.length;
    for (const args of [
      ['--cordon-after-days', '0', '--retire-after-days', '5'],
      ['--cordon-after-days', '7', '--retire-after-days', '366'],
      ['--cordon-after-days', '7'],
      [],
    ]) {
      const run = await cli('stale-policy', t.poolId, ...args);
      expect(run.code, args.join(' ')).not.toBe(0);
    }
    expect(api.requests.length).toBe(before);
  });
});

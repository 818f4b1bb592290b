import { InvalidArgumentError } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess, startCliApi, type ApiServer } from '../../test/cli';
import { testDb } from '../../test/db';
import { captureStderr, type TestTenant } from '../../test/fixtures';
import { parseAcceptanceCheck } from './pools';

describe('parseAcceptanceCheck', () => {
  it('reads identity without a value and the others with their threshold, adding to the ones before', () => {
    const specs = ['identity', 'min-cpus=8', 'min-memory=64', 'gpu-count=0'].reduce(
      (previous, value) => parseAcceptanceCheck(value, previous),
      [] as ReturnType<typeof parseAcceptanceCheck>,
    );
    expect(specs).toEqual([
      { check: 'identity' },
      { check: 'min-cpus', min: 8 },
      { check: 'min-memory', minGiB: 64 },
      { check: 'gpu-count', min: 0 },
    ]);
  });

  it('refuses an unknown check, a missing or bad threshold, a value for identity and a check given twice, saying what is expected', () => {
    expect(() => parseAcceptanceCheck('disk-space=10')).toThrow(/not a check the agent runs; expected one of: identity, min-cpus=<CPUs>/);
    for (const bad of ['min-cpus', 'min-cpus=', 'min-cpus=eight', 'min-cpus=0', 'min-cpus=1.5', 'min-memory=-1', 'gpu-count=1=2']) {
      expect(() => parseAcceptanceCheck(bad), bad).toThrow(InvalidArgumentError);
    }
    expect(() => parseAcceptanceCheck('min-cpus=x')).toThrow(/expected min-cpus=<CPUs>/);
    expect(() => parseAcceptanceCheck('identity=yes')).toThrow(/identity takes no value/);
    expect(() => parseAcceptanceCheck('identity', [{ check: 'identity' }])).toThrow(/more than once/);
  });
});

const db = testDb();
const stderr = captureStderr();
let api: ApiServer;
let t: TestTenant;
let env: Record<string, string>;

beforeAll(async () => {
  ({ api, t, env } = await startCliApi(db, { label: 'pools-cli' }));
});
afterAll(async () => {
  stderr.stop();
  await api?.close();
});

describe('better-compute pools create', { timeout: 60_000 }, () => {
  it('creates a pool with acceptance checks: each with its settings in policy.acceptance, as the agent is sent them', async () => {
    const run = await runCliInProcess(
      [
        'pools',
        'create',
        '--tenant',
        t.tenantId,
        '--site',
        t.siteId,
        '--name',
        'checked',
        '--acceptance-check',
        'identity',
        '--acceptance-check',
        'min-cpus=8',
        '--acceptance-check',
        'min-memory=64',
        '--json',
      ],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    const created = JSON.parse(run.stdout) as { id: string; acceptanceChecks: string[] };
    expect(created.acceptanceChecks).toEqual(['identity', 'min-cpus', 'min-memory']);
    const row = await db.pool.findUniqueOrThrow({ where: { id: created.id } });
    expect(row.acceptanceChecks).toEqual(['identity', 'min-cpus', 'min-memory']);
    expect((row.policy as { acceptance?: unknown }).acceptance).toEqual([
      { check: 'identity' },
      { check: 'min-cpus', min: 8 },
      { check: 'min-memory', minGiB: 64 },
    ]);
  });

  it('refuses a check the agent does not run before sending anything', async () => {
    const before = api.requests.length;
    const run = await runCliInProcess(
      ['pools', 'create', '--tenant', t.tenantId, '--site', t.siteId, '--name', 'unchecked', '--acceptance-check', 'burn-in'],
      env,
    );
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/"burn-in" is not a check the agent runs/);
    expect(api.requests.length).toBe(before);
    expect(await db.pool.count({ where: { siteId: t.siteId, name: 'unchecked' } })).toBe(0);
  });
});

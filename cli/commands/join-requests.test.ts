import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newPxeMachine, runPxeMachines } from '../../agent/sim/pxe';
import { runCli, runCliInProcess, startCliApi, trustOf, type ApiServer } from '../../test/cli';
import { testDb } from '../../test/db';
import { captureStderr, createTestTenant, expectNoSecretLeaks, type TestTenant } from '../../test/fixtures';
import { insertApiKey } from '../../server/api-keys/api-keys';
import { BASE_PATH } from '../../server/config/config';

const db = testDb();
const stderr = captureStderr();
let api: ApiServer;
let t: TestTenant;
let env: Record<string, string>;
let dir: string;
const outputs: string[] = [];
const minted: string[] = [];

beforeAll(async () => {
  ({ api, t, env } = await startCliApi(db, { label: 'jr-cli', sharedPki: true }));
  dir = await mkdtemp(path.join(tmpdir(), 'jr-cli-'));
});
afterAll(async () => {
  stderr.stop();
  await api?.close();
  // A filtered run (-t) may mint nothing to check.
  if (minted.length) await expectNoSecretLeaks(db, minted, [...outputs, ...api.requests, ...stderr.lines]);
});

// In process (the same program as bin/better-compute.mjs); `dev --sim --pxe` below runs as its own process.
async function cli(args: string[]) {
  const run = await runCliInProcess(args, env);
  outputs.push(run.stdout, run.stderr);
  return run;
}
const scope = () => ['--tenant', t.tenantId, '--pool', t.poolId];

describe('better-compute join-requests and discovery-tokens', { timeout: 120_000 }, () => {
  it('mints discovery tokens to 0600 files, lists waiting PXE machines as JSON, approves them all, and they join', async () => {
    const machines = [];
    for (let i = 0; i < 3; i++) {
      const m = newPxeMachine(i);
      const out = path.join(dir, `pxe-${i}.token`);
      const run = await cli([
        'discovery-tokens',
        'create',
        '--tenant',
        t.tenantId,
        '--site',
        t.siteId,
        '--mac',
        m.mac,
        '--ip',
        `10.0.0.${i + 1}`,
        '--boot-lease-epoch',
        '3',
        '--out',
        out,
        '--json',
      ]);
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ role: 'discovery', maxUses: 1, siteId: t.siteId });
      expect((await stat(out)).mode & 0o777).toBe(0o600);
      const token = (await readFile(out, 'utf8')).trim();
      minted.push(token);
      machines.push({ ...m, token });
    }
    const running = runPxeMachines({ serverUrl: api.url, trust: await trustOf(api.url), machines, retryScale: 0.02 });

    let pending: { id: string; mac: string; ip: string; bootLeaseEpoch: number }[] = [];
    for (let i = 0; i < 100 && pending.length < 3; i++) {
      await new Promise((r) => setTimeout(r, 200));
      const list = await cli(['join-requests', 'list', ...scope(), '--json']);
      expect(list.code, list.stderr).toBe(0);
      pending = JSON.parse(list.stdout);
    }
    expect(pending.map((r) => r.mac).sort()).toEqual(machines.map((m) => m.mac).sort());
    expect(pending.every((r) => r.bootLeaseEpoch === 3 && r.ip.startsWith('10.0.0.'))).toBe(true);

    const table = await cli(['join-requests', 'list', ...scope()]);
    expect(table.stdout).toContain(pending[0]!.id);
    const approved = await cli(['join-requests', 'approve', '--all-pending', ...scope(), '--ttl', '900', '--reason', 'intake', '--json']);
    expect(approved.code, approved.stderr).toBe(0);
    expect(JSON.parse(approved.stdout).approved).toHaveLength(3);

    const outcomes = await running;
    expect(outcomes.map((o) => o.kind)).toEqual(['joined', 'joined', 'joined']);
    const consumed = await cli(['join-requests', 'list', ...scope(), '--state', 'consumed', '--json']);
    expect(JSON.parse(consumed.stdout)).toHaveLength(3);
  });

  it('sites update --two-person-approval: one key records 1 of 2, a second key admits, and the machine joins', async () => {
    const two = await createTestTenant(db, { label: 'jr-two' });
    // Two people's keys: a key acts as the person who created it.
    const keyOf = async (name: string) => (await insertApiKey(db, { tenantId: two.tenantId, role: 'admin', name }, `test:${name}`)).key;
    const [first, second] = [
      { ...env, BETTER_COMPUTE_API_KEY: await keyOf('first') },
      { ...env, BETTER_COMPUTE_API_KEY: await keyOf('second') },
    ];
    const as = async (keyEnv: Record<string, string>, args: string[]) => {
      const run = await runCliInProcess(args, keyEnv);
      outputs.push(run.stdout, run.stderr);
      return run;
    };
    const set = await as(first, ['sites', 'update', two.siteId, '--tenant', two.tenantId, '--two-person-approval']);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain('two approvals (by two different people) per request');
    const listed = await as(first, ['sites', 'list', '--tenant', two.tenantId, '--json']);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ id: two.siteId, requiredApprovals: 2 })]);
    const scoped = ['--tenant', two.tenantId, '--pool', two.poolId];
    const m = newPxeMachine(7);
    const out = path.join(dir, 'two.token');
    expect(
      (await as(first, ['discovery-tokens', 'create', '--tenant', two.tenantId, '--site', two.siteId, '--mac', m.mac, '--out', out])).code,
    ).toBe(0);
    const token = (await readFile(out, 'utf8')).trim();
    minted.push(token);
    const running = runPxeMachines({ serverUrl: api.url, trust: await trustOf(api.url), machines: [{ ...m, token }], retryScale: 0.02 });
    let id: string | undefined;
    for (let i = 0; i < 100 && !id; i++) {
      await new Promise((r) => setTimeout(r, 200));
      id = JSON.parse((await as(first, ['join-requests', 'list', ...scoped, '--json'])).stdout)[0]?.id;
    }
    const recorded = await as(first, ['join-requests', 'approve', id!, ...scoped]);
    expect(recorded.code, recorded.stderr).toBe(0);
    expect(recorded.stdout).toContain(`Recorded your approval of ${id} (1 of 2)`);
    // The same key again is still 1 of 2; the list says so.
    expect((await as(first, ['join-requests', 'approve', id!, ...scoped])).stdout).toContain('(1 of 2)');
    expect((await as(second, ['join-requests', 'list', ...scoped])).stdout).toMatch(/1 of 2 \(api-key:ak_/);
    const admitted = await as(second, ['join-requests', 'approve', id!, ...scoped, '--json']);
    expect(JSON.parse(admitted.stdout)).toMatchObject({ id, state: 'approved', firstApproval: { by: expect.stringMatching(/^api-key:/) } });
    expect(await running).toEqual([expect.objectContaining({ kind: 'joined' })]);
  });

  it('rejects a request with a reason, and approve of the rejected one exits with INVALID_STATE', async () => {
    const m = newPxeMachine(9);
    const out = path.join(dir, 'reject.token');
    expect((await cli(['discovery-tokens', 'create', '--tenant', t.tenantId, '--site', t.siteId, '--mac', m.mac, '--out', out])).code).toBe(
      0,
    );
    const token = (await readFile(out, 'utf8')).trim();
    minted.push(token);
    const running = runPxeMachines({ serverUrl: api.url, trust: await trustOf(api.url), machines: [{ ...m, token }], retryScale: 0.02 });
    let id: string | undefined;
    for (let i = 0; i < 100 && !id; i++) {
      await new Promise((r) => setTimeout(r, 200));
      id = JSON.parse((await cli(['join-requests', 'list', ...scope(), '--json'])).stdout)[0]?.id;
    }
    // A rejection is final, so it carries a reason: the CLI asks for one, and the API refuses a blank one.
    for (const reasonless of [[], ['--reason', '   ']]) {
      const refused = await cli(['join-requests', 'reject', id!, ...scope(), ...reasonless]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/--reason/);
    }
    for (const body of [{}, { reason: '  ' }]) {
      const rest = await fetch(`${api.url}${BASE_PATH}/v1/tenants/${t.tenantId}/pools/${t.poolId}/join-requests/${id}/reject`, {
        method: 'POST',
        headers: { authorization: `Bearer ${env.BETTER_COMPUTE_API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(rest.status).toBe(400);
      expect(await rest.text()).toMatch(/reason/);
    }
    expect(JSON.parse((await cli(['join-requests', 'get', id!, ...scope(), '--json'])).stdout)).toMatchObject({ state: 'pending' });
    const rejected = await cli(['join-requests', 'reject', id!, ...scope(), '--reason', 'unknown serial', '--json']);
    expect(JSON.parse(rejected.stdout)).toMatchObject({ state: 'rejected', reason: 'unknown serial' });
    expect(await running).toEqual([{ kind: 'refused' }]);
    const again = await cli(['join-requests', 'approve', id!, ...scope()]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/rejected/);
    const shown = await cli(['join-requests', 'get', id!, ...scope(), '--json']);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id, state: 'rejected', decidedBy: expect.stringMatching(/^api-key:/) });
  });

  it('dev --sim 2 --pxe boots two PXE machines that wait, retrying every BETTER_COMPUTE_SIM_RETRY_SECONDS, then join once approved', async () => {
    const site = t.siteId;
    const joins = () => api.requests.filter((r) => r === 'POST /api/compute/v1/join').length;
    const before = joins();
    // The server asks a pending machine to retry after 30 s; the simulation's setting makes it 1 s.
    const sim = runCli(['dev', '--sim', '2', '--pxe', '--tenant', t.tenantId, '--site', site, '--json'], {
      ...env,
      BETTER_COMPUTE_SIM_RETRY_SECONDS: '1',
    });
    void sim.then((run) => outputs.push(run.stdout, run.stderr));
    let pending: unknown[] = [];
    for (let i = 0; i < 150 && pending.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 200));
      pending = JSON.parse((await cli(['join-requests', 'list', ...scope(), '--json'])).stdout);
    }
    expect(pending).toHaveLength(2);
    // Both machines asked again at the 1 s interval before anyone approved: at least two joins each.
    for (let i = 0; i < 75 && joins() - before < 4; i++) await new Promise((r) => setTimeout(r, 200));
    expect(joins() - before).toBeGreaterThanOrEqual(4);
    const approved = await cli(['join-requests', 'approve', '--all-pending', ...scope()]);
    expect(approved.stdout).toMatch(/Approved 2 request/);
    const run = await sim;
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ machines: 2, joined: 2, refused: 0, failed: 0, waitedForApproval: 2 });
  });

  it('approve --all-pending --search decides 250 matching requests on the server with progress, and reject --all-pending takes another filter', async () => {
    const insert = (count: number, hostname: string) => db.$executeRaw`
      INSERT INTO join_requests (id, tenant_id, site_id, attestor, state, machine_key, claims, csr_sha256, expires_at, created_at)
      SELECT 'jreq_cli' || ${hostname.replace(/[^a-z0-9]/g, '')} || g, ${t.tenantId}, ${t.siteId}, 'discovery', 'pending', 'cli:' || ${hostname} || g,
             jsonb_build_object('hostname', ${hostname} || '-' || g), 'x', now() + interval '1 day', now() - g * interval '1 millisecond'
        FROM generate_series(1, ${count}) AS g`;
    await insert(250, 'rack-b7');
    await insert(5, 'lab-x');
    const listed = await cli(['join-requests', 'list', ...scope(), '--search', 'RACK-B7', '--json']);
    expect(JSON.parse(listed.stdout)).toHaveLength(250);
    const both = await cli(['join-requests', 'approve', '--all-pending', ...scope(), '--trusted', '--untrusted']);
    expect(both.code).toBe(2);
    const withId = await cli(['join-requests', 'reject', 'jreq_x', ...scope(), '--search', 'x']);
    expect(withId.code).toBe(2);

    const sent = api.requests.length;
    const approved = await cli([
      'join-requests',
      'approve',
      '--all-pending',
      ...scope(),
      '--search',
      'rack-b7',
      '--untrusted',
      '--older-than',
      '0s',
    ]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toMatch(/^Approved 250 request\(s\)\n$/);
    expect(approved.stderr).toMatch(/Approving: 250\/250/);
    // Two pages of 200 and one count, never a call per request.
    expect(api.requests.slice(sent).filter((r) => r.includes('/join-requests/approve')).length).toBe(2);
    expect(
      await db.joinRequest.count({
        where: { siteId: t.siteId, state: 'approved', claims: { path: ['hostname'], string_starts_with: 'rack-b7' } },
      }),
    ).toBe(250);

    const rejected = await cli([
      'join-requests',
      'reject',
      '--all-pending',
      ...scope(),
      '--search',
      'lab-x',
      '--reason',
      'not ours',
      '--json',
    ]);
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(JSON.parse(rejected.stdout).rejected).toHaveLength(5);
    expect(JSON.parse((await cli(['join-requests', 'list', ...scope(), '--json'])).stdout)).toEqual([]);
  });
});

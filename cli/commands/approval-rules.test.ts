import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JoinTrust } from '../../agent/join';
import { newPxeMachine, runPxeMachine, type PxeMachine } from '../../agent/sim/pxe';
import { trustOf, runCliInProcess, startCliApi, type ApiServer } from '../../test/cli';
import { testDb } from '../../test/db';
import { captureStderr, expectNoSecretLeaks, type TestTenant } from '../../test/fixtures';

const db = testDb();
const stderr = captureStderr();
let api: ApiServer;
let t: TestTenant;
let env: Record<string, string>;
let dir: string;
let trust: JoinTrust;
const outputs: string[] = [];
const minted: string[] = [];

beforeAll(async () => {
  ({ api, t, env } = await startCliApi(db, { label: 'rules-cli', sharedPki: true }));
  dir = await mkdtemp(path.join(tmpdir(), 'rules-cli-'));
  trust = await trustOf(api.url);
});
afterAll(async () => {
  stderr.stop();
  await api?.close();
  if (minted.length) await expectNoSecretLeaks(db, minted, [...outputs, ...api.requests, ...stderr.lines]);
});

async function cli(args: string[]) {
  const run = await runCliInProcess(args, env);
  outputs.push(run.stdout, run.stderr);
  return run;
}
async function json<T>(args: string[]): Promise<T> {
  const run = await cli([...args, '--json']);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as T;
}
const site = () => ['--tenant', t.tenantId, '--site', t.siteId];

/** A simulated PXE machine with a discovery token minted through the CLI, as a site's boot step does. */
async function pxeMachine(index: number): Promise<PxeMachine> {
  const m = newPxeMachine(index);
  const out = path.join(dir, `pxe-${index}.token`);
  const run = await cli(['discovery-tokens', 'create', ...site(), '--mac', m.mac, '--ip', '10.30.0.9', '--out', out]);
  expect(run.code, run.stderr).toBe(0);
  const token = (await readFile(out, 'utf8')).trim();
  minted.push(token);
  return { ...m, token };
}
const run = (machine: PxeMachine, signal?: AbortSignal) =>
  runPxeMachine({ serverUrl: api.url, trust, machine, retryAfterSeconds: 0.2, signal });

async function pendingFor(mac: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const items = await json<{ id: string; mac: string }[]>(['join-requests', 'list', '--tenant', t.tenantId, '--pool', t.poolId]);
    const found = items.find((r) => r.mac === mac);
    if (found) return found.id;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`no pending request for ${mac}`);
}

describe('better-compute approval-rules and expected-machines', { timeout: 120_000 }, () => {
  it('dry-runs a rule, saves it, and the matching PXE machine is admitted at once while the other stays pending', async () => {
    // newPxeMachine: even indexes claim a Supermicro SYS-421GE-TNRT, odd ones a Dell PowerEdge R760xa.
    const smc = await pxeMachine(0);
    const dell = await pxeMachine(1);
    const stop = new AbortController();
    const smcRun = run(smc, stop.signal);
    const dellRun = run(dell, stop.signal);
    const smcRequest = await pendingFor(smc.mac);
    const dellRequest = await pendingFor(dell.mac);

    const rule = [
      '--name',
      'GPU intake',
      '--action',
      'approve',
      '--pool',
      t.poolId,
      '--vendor',
      'supermicro',
      '--model',
      'SYS-421GE-*',
      '--subnet',
      '10.30.0.0/16',
    ];
    const dry = await json<{
      considered: number;
      items: { requestId: string; action: string; decidedEarlierBy: string | null }[];
      matchedOn: { field: string; source: string }[];
    }>(['approval-rules', 'dry-run', ...site(), ...rule]);
    expect(dry.items).toEqual([expect.objectContaining({ requestId: smcRequest, action: 'approve', decidedEarlierBy: null })]);
    expect(dry.matchedOn).toEqual([
      { field: 'subnets', source: 'vouched' },
      { field: 'vendors', source: 'claimed' },
      { field: 'models', source: 'claimed' },
    ]);
    const table = await cli(['approval-rules', 'dry-run', ...site(), ...rule]);
    expect(table.stdout).toContain("vendors (the machine's claim)");
    expect(table.stdout).toContain('subnets (vouched by the boot step)');

    const created = await json<{ id: string; position: number }>(['approval-rules', 'create', ...site(), ...rule]);
    expect(created.position).toBe(1);
    expect(await smcRun).toMatchObject({ kind: 'joined' });
    const decided = await json<{ state: string; decidedBy: string; reason: string }>([
      'join-requests',
      'get',
      smcRequest,
      '--tenant',
      t.tenantId,
      '--pool',
      t.poolId,
    ]);
    expect(decided).toMatchObject({ state: 'consumed', decidedBy: `rule:${created.id}`, reason: 'GPU intake' });
    // Exactly what the dry run listed was decided by the rule.
    expect((await db.joinRequest.findMany({ where: { siteId: t.siteId, decidedBy: `rule:${created.id}` } })).map((r) => r.id)).toEqual(
      dry.items.map((i) => i.requestId),
    );
    expect(await pendingFor(dell.mac)).toBe(dellRequest);

    // A second rule, moved first, disabled, listed and deleted; the Dell keeps waiting throughout.
    const hold = await json<{ id: string }>([
      'approval-rules',
      'create',
      ...site(),
      '--name',
      'hold Dell',
      '--action',
      'leave',
      '--vendor',
      'Dell*',
    ]);
    const moved = await json<{ id: string; position: number }[]>(['approval-rules', 'move', hold.id, ...site(), '--position', '1']);
    expect(moved.map((r) => r.id)).toEqual([hold.id, created.id]);
    const disabled = await json<{ enabled: boolean; match: Record<string, unknown> }>([
      'approval-rules',
      'update',
      hold.id,
      ...site(),
      '--disable',
      '--model',
      'PowerEdge*',
    ]);
    expect(disabled).toMatchObject({ enabled: false, match: { vendors: ['Dell*'], models: ['PowerEdge*'] } });
    const listed = await cli(['approval-rules', 'list', ...site()]);
    expect(listed.stdout).toMatch(/GPU intake/);
    expect(listed.stdout).toMatch(/hold Dell.*no/);
    expect((await json<{ id: string }>(['approval-rules', 'delete', hold.id, ...site()])).id).toBe(hold.id);
    expect((await json<{ id: string }[]>(['approval-rules', 'list', ...site()])).map((r) => r.id)).toEqual([created.id]);
    const bad = await cli(['approval-rules', 'create', ...site(), '--name', 'no pool', '--action', 'approve', '--vendor', 'x']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/poolId/);
    stop.abort();
    await dellRun;
  });

  it('imports expected machines from a file (a dry run lists the rejected row) and the listed machine joins its pool', async () => {
    const pool = await t.newPool();
    const m = await pxeMachine(2);
    const file = path.join(dir, 'expected.csv');
    await writeFile(file, ['mac,hostname,pool', `${m.mac.toUpperCase()},gpu-e-01,${pool}`, 'not-a-mac,bad,'].join('\n'));
    const preview = await json<{ importId: string | null; accepted: number; rejected: { row: number; reason: string }[] }>([
      'expected-machines',
      'import',
      file,
      ...site(),
      '--pool',
      t.poolId,
      '--dry-run',
    ]);
    expect(preview).toMatchObject({
      importId: null,
      accepted: 1,
      rejected: [{ row: 2, reason: 'mac: not a permanent, globally administered MAC' }],
    });
    expect((await json<{ total: number }>(['expected-machines', 'list', ...site()])).total).toBe(0);

    const saved = await json<{ importId: string; accepted: number }>(['expected-machines', 'import', file, ...site(), '--pool', t.poolId]);
    expect(saved).toMatchObject({ importId: expect.stringMatching(/^imp_/), accepted: 1 });
    const waiting = await cli(['expected-machines', 'list', ...site()]);
    expect(waiting.stdout).toContain(m.mac);

    const outcome = await run(m);
    expect(outcome.kind).toBe('joined');
    const node = await db.node.findUniqueOrThrow({ where: { id: (outcome as { nodeId: string }).nodeId } });
    expect(node.poolId).toBe(pool);
    const arrived = await json<{ items: { mac: string; requestId: string }[] }>(['expected-machines', 'list', ...site(), '--arrived']);
    expect(arrived.items).toEqual([expect.objectContaining({ mac: m.mac, requestId: expect.stringMatching(/^jreq_/) })]);
    expect((await json<{ total: number }>(['expected-machines', 'list', ...site()])).total).toBe(0);

    // A machine nobody listed is an unmatched arrival; a second import is deleted by id.
    const stranger = await pxeMachine(3);
    const stop = new AbortController();
    const strangerRun = run(stranger, stop.signal);
    await pendingFor(stranger.mac);
    const unmatched = await json<{ mac: string }[]>(['expected-machines', 'unmatched', ...site()]);
    expect(unmatched.map((u) => u.mac)).toContain(stranger.mac);
    expect(unmatched.map((u) => u.mac)).not.toContain(m.mac);
    stop.abort();
    await strangerRun;
    const other = path.join(dir, 'other.json');
    await writeFile(other, JSON.stringify([{ serial: 'SN-DEL-1' }]));
    await json(['expected-machines', 'import', other, ...site(), '--pool', t.poolId]);
    const [entry] = (await json<{ items: { id: string }[] }>(['expected-machines', 'list', ...site()])).items;
    expect(await json(['expected-machines', 'delete', entry!.id, ...site()])).toEqual({ deleted: 1 });
  });
});

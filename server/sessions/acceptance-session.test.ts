import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MachineProbe } from '../../agent/acceptance/measure';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { machineClaims, mintToken } from '../../test/join-harness';
import { createRenewHarness, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { runAgentLoop, type RunningAgent } from '../../test/session-agent';
import type { HardwareClaims } from '../../protocol/hardware-claims';
import { adoptNode, recheckNode } from '../nodes/lifecycle';
import { getNode } from '../nodes/nodes';

// Acceptance checks over the session: the pool's policy.acceptance is asked on the node's session, bcd (the
// agent's session loop) measures the machine and reports on the same connection, the control plane decides,
// publishes the events, sets AcceptanceFailed, and adopts on a pass. The machine's facts come from a probe
// (a test cannot change the CPU count); everything else is the real path.

const GiB = 1024 ** 3;
const ACCEPTANCE = [
  { check: 'identity' as const },
  { check: 'min-cpus' as const, min: 4 },
  { check: 'min-memory' as const, minGiB: 8, timeoutSeconds: 5 },
  { check: 'gpu-count' as const, min: 0 },
];
const LIFECYCLE = [
  'node.joined',
  'node.connected',
  'node.acceptance.started',
  'node.acceptance.passed',
  'node.acceptance.failed',
  'node.adopted',
];

let r: RenewHarness;
let signingKey: X509Certificate['publicKey'];
const loops: RunningAgent[] = [];
beforeAll(async () => {
  r = await createRenewHarness();
  signingKey = new X509Certificate(r.h.trust.signingCertificateDer).publicKey;
});
afterAll(async () => {
  loops.forEach((loop) => void loop.stop());
  await r?.close();
});

async function lifecycleOf(t: TestTenant, nodeId: string) {
  const events = await testDb().event.findMany({ where: { tenantId: t.tenantId, type: { in: LIFECYCLE } }, orderBy: { id: 'asc' } });
  return events
    .filter((e) => (e.data as { nodeId?: string }).nodeId === nodeId)
    .map((e) => ({ type: e.type, data: e.data as Record<string, unknown> }));
}
const typesOf = async (t: TestTenant, nodeId: string) => (await lifecycleOf(t, nodeId)).map((e) => e.type);

function machine(claims: HardwareClaims, facts: { cpus: number; memoryGiB: number; gpus: number }): MachineProbe & { facts: typeof facts } {
  return {
    facts,
    claims: async () => claims,
    cpus: async () => facts.cpus,
    memoryBytes: async () => facts.memoryGiB * GiB,
    gpus: async () => facts.gpus,
  };
}

async function joinAndKeepSession(t: TestTenant, probe: MachineProbe, claims: HardwareClaims) {
  const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!, claims);
  keepSession(dir, probe);
  return answer.nodeId;
}

/** The agent's session loop on `dir`, measuring with `probe`, running until the file's tests end. */
function keepSession(dir: string, probe: MachineProbe) {
  loops.push(runAgentLoop({ identityDir: dir, ...r.target, agentVersion: '0.1.0-acceptance', signingKey, probe }));
}

describe('acceptance checks over the session', () => {
  it('a passing machine is adopted: joined, connected, acceptance started, passed, adopted, in that order', async () => {
    const t = await createTestTenant(testDb(), { pool: { policy: { acceptance: ACCEPTANCE } } });
    expect(t.pool.acceptanceChecks).toEqual(['identity', 'min-cpus', 'min-memory', 'gpu-count']);
    const claims = machineClaims();
    const nodeId = await joinAndKeepSession(t, machine(claims, { cpus: 8, memoryGiB: 16, gpus: 0 }), claims);
    await expect
      .poll(() => typesOf(t, nodeId), { timeout: 10_000, interval: 100 })
      .toEqual(['node.joined', 'node.connected', 'node.acceptance.started', 'node.acceptance.passed', 'node.adopted']);
    const events = await lifecycleOf(t, nodeId);
    expect(events[3]!.data.results).toEqual([
      { check: 'identity', passed: true, message: 'identifiers match the join claims' },
      { check: 'min-cpus', passed: true, message: '8 CPUs (at least 4)' },
      { check: 'min-memory', passed: true, message: '16 GiB of memory (at least 8)' },
      { check: 'gpu-count', passed: true, message: '0 GPUs (at least 0)' },
    ]);
    expect(events[4]!.data).toMatchObject({ nodeId, by: 'acceptance' });
    const node = await getNode(testDb(), t.viewer, { tenantId: t.tenantId, nodeId });
    expect(node.state).toBe('adopted');
    expect(node.conditions.find((c) => c.type === 'AcceptanceFailed')).toBeUndefined();
    expect(
      await testDb().auditEntry.count({ where: { resource: `compute-node/${nodeId}`, action: 'node.adopted', actor: 'acceptance' } }),
    ).toBe(1);
  });

  it('a failing machine gets AcceptanceFailed with the failing check, and is adopted after the fix and nodes.recheck', async () => {
    const t = await createTestTenant(testDb(), { pool: { policy: { acceptance: ACCEPTANCE } } });
    const claims = machineClaims();
    const probe = machine(claims, { cpus: 2, memoryGiB: 16, gpus: 0 });
    const nodeId = await joinAndKeepSession(t, probe, claims);
    await expect
      .poll(() => typesOf(t, nodeId), { timeout: 10_000, interval: 100 })
      .toEqual(['node.joined', 'node.connected', 'node.acceptance.started', 'node.acceptance.failed']);
    const failed = (await lifecycleOf(t, nodeId))[3]!;
    expect(failed.data.failed).toEqual(['min-cpus']);
    let node = await getNode(testDb(), t.viewer, { tenantId: t.tenantId, nodeId });
    expect(node.state).toBe('adopting');
    const condition = node.conditions.find((c) => c.type === 'AcceptanceFailed')!;
    expect(condition).toMatchObject({ status: true, message: 'Failed: min-cpus (2 CPUs, need at least 4)' });
    expect(condition.checks!.map((c) => [c.check, c.passed])).toEqual([
      ['identity', true],
      ['min-cpus', false],
      ['min-memory', true],
      ['gpu-count', true],
    ]);

    // A reconnect does not run a failed run again; the operator fixes the machine and asks for a recheck.
    probe.facts.cpus = 8;
    await recheckNode(testDb(), t.operator, { tenantId: t.tenantId, nodeId });
    await expect
      .poll(() => typesOf(t, nodeId), { timeout: 10_000, interval: 100 })
      .toEqual([
        'node.joined',
        'node.connected',
        'node.acceptance.started',
        'node.acceptance.failed',
        'node.acceptance.started',
        'node.acceptance.passed',
        'node.adopted',
      ]);
    node = await getNode(testDb(), t.viewer, { tenantId: t.tenantId, nodeId });
    expect(node.state).toBe('adopted');
    await expect(recheckNode(testDb(), t.operator, { tenantId: t.tenantId, nodeId })).rejects.toMatchObject({ code: 'INVALID_STATE' });
  });

  it('a machine whose identifiers changed fails identity; nodes.adopt still adopts it by hand', async () => {
    const t = await createTestTenant(testDb(), { pool: { policy: { acceptance: ACCEPTANCE } } });
    const claims = machineClaims();
    const nodeId = await joinAndKeepSession(
      t,
      machine({ ...claims, productSerial: 'SN-SWAPPED' }, { cpus: 8, memoryGiB: 16, gpus: 0 }),
      claims,
    );
    await expect.poll(() => typesOf(t, nodeId), { timeout: 10_000, interval: 100 }).toContain('node.acceptance.failed');
    const node = await getNode(testDb(), t.viewer, { tenantId: t.tenantId, nodeId });
    expect(node.conditions.find((c) => c.type === 'AcceptanceFailed')!.message).toBe(
      'Failed: identity (identifiers differ from the join claims: productSerial)',
    );
    await adoptNode(testDb(), t.operator, { tenantId: t.tenantId, nodeId });
    expect((await getNode(testDb(), t.viewer, { tenantId: t.tenantId, nodeId })).state).toBe('adopted');
  });

  it('a reclaim runs acceptance again for the new identity generation', async () => {
    const t = await createTestTenant(testDb(), { pool: { policy: { acceptance: ACCEPTANCE } } });
    const claims = machineClaims();
    const probe = machine(claims, { cpus: 8, memoryGiB: 16, gpus: 0 });
    const nodeId = await joinAndKeepSession(t, probe, claims);
    await expect.poll(() => typesOf(t, nodeId), { timeout: 10_000, interval: 100 }).toContain('node.adopted');
    const again = await joinThroughGateway(r, (await mintToken(t, { allowReclaim: true })).token!, claims);
    expect(again.answer.nodeId).toBe(nodeId);
    keepSession(again.dir, probe);
    await expect
      .poll(async () => (await lifecycleOf(t, nodeId)).filter((e) => e.data.identityGeneration === 2).map((e) => e.type), {
        timeout: 10_000,
        interval: 100,
      })
      .toEqual(['node.joined', 'node.acceptance.started', 'node.acceptance.passed']);
    await expect
      .poll(async () => (await getNode(testDb(), t.viewer, { tenantId: t.tenantId, nodeId })).state, { timeout: 5_000 })
      .toBe('adopted');
  });

  it('a pool without checks adopts at join, as before, and its session asks nothing', async () => {
    const t = await createTestTenant(testDb());
    const claims = machineClaims();
    const nodeId = await joinAndKeepSession(t, machine(claims, { cpus: 1, memoryGiB: 1, gpus: 0 }), claims);
    await expect
      .poll(() => typesOf(t, nodeId), { timeout: 10_000, interval: 100 })
      .toEqual(['node.joined', 'node.adopted', 'node.connected']);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await typesOf(t, nodeId)).toEqual(['node.joined', 'node.adopted', 'node.connected']);
    expect(await testDb().nodeAcceptanceRun.count({ where: { nodeId } })).toBe(0);
  });
});

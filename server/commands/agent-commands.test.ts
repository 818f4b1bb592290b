import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadIdentity } from '../../agent/renew/identity';
import { TrustStore } from '../../agent/trust/store';
import { testDb } from '../../test/db';
import type { TestTenant } from '../../test/fixtures';
import { mintToken } from '../../test/join-harness';
import { useCommandTestbed, type CommandTestbed } from '../../test/command-testbed';
import { joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { runAgentLoop } from '../../test/session-agent';
import { enqueueCommand } from './enqueue';
import { getBatch, getCommand } from './queries';

// Commands end to end: enqueued through the domain call the API uses, delivered by the real gateway on the
// session the agent's own loop holds (agent/session/loop.ts with agent/commands), run by the agent's runner and
// answered on the same connection, as `bcd node` and `better-compute agent run` do.

let r: RenewHarness;
let t: TestTenant;
let closeAfter: CommandTestbed['closeAfter'];
useCommandTestbed((bed) => ({ r, t, closeAfter } = bed));

/** A node joined through the gateway whose session loop runs commands; its trust set holds the join answer's. */
async function runningAgent(poolId?: string) {
  const { dir, answer } = await joinThroughGateway(r, (await mintToken(t, { maxUses: 1, ...(poolId ? { poolId } : {}) })).token!);
  const trust = await TrustStore.open({
    dir,
    install: { servingCaPin: r.target.servingCaPin, joinSigningKeyPin: r.h.trust.signingKeyPin },
    log: () => {},
  });
  trust.learnSigningKey(new X509Certificate(r.h.trust.signingCertificateDer).publicKey);
  await trust.acceptAnswerTrust(answer.trust, answer, 'join answer');
  const loop = runAgentLoop({
    identityDir: dir,
    ...r.target,
    trust,
    agentVersion: '0.1.0-commands',
    renewalDelay: () => 3_600_000,
    commands: { doctor: async () => ({ checks: [{ name: 'identity', ok: true }] }) },
  });
  closeAfter(loop.stop);
  await expect.poll(() => testDb().nodeSession.count({ where: { nodeId: answer.nodeId } }), { timeout: 10_000 }).toBeGreaterThan(0);
  return { dir, nodeId: answer.nodeId };
}

const finished = async (commandId: string) => {
  const command = await getCommand(testDb(), t.viewer, { commandId });
  return ['succeeded', 'failed', 'rejected', 'expired'].includes(command.state) ? command : null;
};

describe('commands to an agent that runs them', () => {
  it('answers bcd.doctor with its report', async () => {
    const agent = await runningAgent();
    const { command } = await enqueueCommand(testDb(), t.operator, { nodeId: agent.nodeId, kind: 'bcd.doctor', timeoutSeconds: 60 });
    await expect.poll(() => finished(command!.id), { timeout: 15_000 }).not.toBeNull();
    expect(await getCommand(testDb(), t.viewer, { commandId: command!.id })).toMatchObject({
      state: 'succeeded',
      output: { checks: [{ name: 'identity', ok: true }] },
    });
  });

  it('renews on bcd.renew and answers the new certificate serial, then trust.refresh opens a new session', async () => {
    const agent = await runningAgent();
    const before = await loadIdentity(agent.dir);
    const { command } = await enqueueCommand(testDb(), t.operator, { nodeId: agent.nodeId, kind: 'bcd.renew', timeoutSeconds: 60 });
    await expect.poll(() => finished(command!.id), { timeout: 20_000 }).not.toBeNull();
    const renewed = await getCommand(testDb(), t.viewer, { commandId: command!.id });
    const after = await loadIdentity(agent.dir);
    expect(after.leaf.serialNumber).not.toBe(before.leaf.serialNumber);
    expect(renewed).toMatchObject({ state: 'succeeded', output: { serial: after.leaf.serialNumber.toLowerCase() } });
    // The session moved to the new certificate.
    await expect
      .poll(async () => (await testDb().nodeSession.findMany({ where: { nodeId: agent.nodeId } })).map((s) => s.certSerial), {
        timeout: 10_000,
      })
      .toEqual([after.leaf.serialNumber.toLowerCase()]);

    const sessionsBefore = (await testDb().nodeSession.findMany({ where: { nodeId: agent.nodeId } })).map((s) => s.id);
    const { command: refresh } = await enqueueCommand(testDb(), t.operator, {
      nodeId: agent.nodeId,
      kind: 'trust.refresh',
      timeoutSeconds: 60,
    });
    await expect.poll(() => finished(refresh!.id), { timeout: 20_000 }).not.toBeNull();
    expect(await getCommand(testDb(), t.viewer, { commandId: refresh!.id })).toMatchObject({ state: 'succeeded', output: {} });
    await expect
      .poll(async () => (await testDb().nodeSession.findMany({ where: { nodeId: agent.nodeId } })).map((s) => s.id), { timeout: 10_000 })
      .not.toEqual(sessionsBefore);
  });

  it('runs a batch over the connected nodes of a pool, with its progress', async () => {
    const pool = await t.newPool();
    // A node of the pool without a session is not matched by `connected: true`.
    await joinThroughGateway(r, (await mintToken(t, { maxUses: 1, poolId: pool })).token!);
    await runningAgent(pool);
    await runningAgent(pool);
    const { batch } = await enqueueCommand(testDb(), t.operator, {
      tenantId: t.tenantId,
      matching: { poolId: pool, connected: true },
      kind: 'bcd.doctor',
      timeoutSeconds: 60,
    });
    expect(batch!.total).toBe(2);
    await expect.poll(async () => (await getBatch(testDb(), t.viewer, { batchId: batch!.id })).done, { timeout: 20_000 }).toBe(true);
    const progress = await getBatch(testDb(), t.viewer, { batchId: batch!.id });
    expect(progress.counts).toMatchObject({ succeeded: 2, queued: 0, sent: 0, failed: 0, rejected: 0, expired: 0 });
  });
});

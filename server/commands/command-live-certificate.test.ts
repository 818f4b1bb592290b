import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadIdentity } from '../../agent/renew/identity';
import { RESULT_REFUSED } from '../../protocol/command-wire';
import { testDb } from '../../test/db';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { mintToken } from '../../test/join-harness';
import { createRenewHarness, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { openCommandSession, verifiedCommand, type CommandSession } from '../../test/command-session';
import { enqueueCommand } from './enqueue';

// Only a live certificate counts for commands: a result from an expired or superseded (older identity
// generation) certificate is refused as a revoked one's is, and a node whose certificates all expired is
// not sent one.

let r: RenewHarness;
let t: TestTenant;
const open: CommandSession[] = [];

beforeAll(async () => {
  r = await createRenewHarness();
  t = await createTestTenant(testDb());
});
afterAll(async () => {
  for (const s of open) s.close();
  await r?.close();
});

async function sentCommand() {
  const { dir, answer } = await joinThroughGateway(r, (await mintToken(t, { maxUses: 1 })).token!);
  const session = await openCommandSession(r.target, await loadIdentity(dir), answer.nodeId);
  open.push(session);
  await expect.poll(() => session.events.some((e) => e.type === 'welcome'), { timeout: 5_000 }).toBe(true);
  const { command } = await enqueueCommand(testDb(), t.operator, { nodeId: answer.nodeId, kind: 'bcd.doctor', timeoutSeconds: 600 });
  await expect
    .poll(() => session.commands().some((c) => verifiedCommand(c, r.h.crypto.commandTrustBundle).commandId === command!.id), {
      timeout: 5_000,
    })
    .toBe(true);
  return { nodeId: answer.nodeId, session, commandId: command!.id };
}

const refusalOf = async (commandId: string) =>
  (
    await testDb().event.findFirst({
      where: { tenantId: t.tenantId, type: 'security.command.result-refused', data: { path: ['commandId'], equals: commandId } },
    })
  )?.data as { reason: string } | undefined;
const good = JSON.stringify({ status: 'succeeded', output: {} });

describe('results need a live certificate', () => {
  it('refuses a result from an expired certificate with the uniform bytes', async () => {
    const { nodeId, session, commandId } = await sentCommand();
    await testDb().$executeRaw`UPDATE node_certs SET not_after = now() - interval '1 second' WHERE node_id = ${nodeId}`;
    const answer = await session.postResult(commandId, good);
    expect(answer.status).toBe(RESULT_REFUSED.status);
    expect(answer.body.equals(RESULT_REFUSED.body)).toBe(true);
    expect(await refusalOf(commandId)).toMatchObject({ reason: 'expired' });
    expect((await testDb().nodeCommand.findUniqueOrThrow({ where: { id: commandId } })).state).toBe('sent');
  });

  it('refuses a result from a certificate of an older identity generation', async () => {
    const { nodeId, session, commandId } = await sentCommand();
    await testDb().$executeRaw`UPDATE nodes SET identity_generation = identity_generation + 1 WHERE id = ${nodeId}`;
    const answer = await session.postResult(commandId, good);
    expect(answer.body.equals(RESULT_REFUSED.body)).toBe(true);
    expect(await refusalOf(commandId)).toMatchObject({ reason: 'generation' });
    expect((await testDb().nodeCommand.findUniqueOrThrow({ where: { id: commandId } })).state).toBe('sent');
  });
});

describe('enqueue needs a live certificate', () => {
  it('refuses a node whose certificates all expired, and rejects it in a batch', async () => {
    const poolId = await t.newPool();
    const { answer } = await joinThroughGateway(r, (await mintToken(t, { maxUses: 1, poolId })).token!);
    await testDb().$executeRaw`UPDATE node_certs SET not_after = now() - interval '1 second' WHERE node_id = ${answer.nodeId}`;
    expect(await failure(enqueueCommand(testDb(), t.operator, { nodeId: answer.nodeId, kind: 'bcd.doctor' }))).toMatchObject({
      code: 'INVALID_STATE',
      message: expect.stringContaining('no live certificate'),
    });
    const { batch } = await enqueueCommand(testDb(), t.operator, { tenantId: t.tenantId, matching: { poolId }, kind: 'bcd.doctor' });
    expect(batch).toMatchObject({ total: 1, counts: { rejected: 1, queued: 0 } });
    const [row] = await testDb().nodeCommand.findMany({ where: { batchId: batch!.id } });
    expect(row).toMatchObject({ state: 'rejected', reason: 'no-live-certificate' });
  });
});

import { describe, expect, it } from 'vitest';
import { RESULT_REFUSED } from '../../protocol/command-wire';
import { testDb } from '../../test/db';
import { failure, type TestTenant } from '../../test/fixtures';
import { mintToken } from '../../test/join-harness';
import { BASE, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { verifiedCommand, type CommandSession } from '../../test/command-session';
import { useCommandTestbed, type CommandTestbed } from '../../test/command-testbed';
import { CommandResultService, COMMAND_RESULT_RATE } from './result';
import { enqueueCommand } from './enqueue';
import { expireCommands } from './expiry';
import { voucherFromServingChain } from '../gateway/credentials';
import { PEER_HEADER, VOUCH_HEADER, vouchHeaders } from '../vouching/vouch';

// The result endpoint's abuse cases (protocol.md "Commands"): fuzzed bodies, results from another node's
// certificate, two results racing for one command, a flood past the per-node rate; and expiry.

let r: RenewHarness;
let t: TestTenant;
let connectedNode: CommandTestbed['connectedNode'];
useCommandTestbed((bed) => ({ r, t, connectedNode } = bed));

/** Enqueues a doctor run to the node and waits for it on `session`; its id. */
async function sentTo(nodeId: string, session: CommandSession, timeoutSeconds = 60): Promise<string> {
  const { command } = await enqueueCommand(testDb(), t.operator, { nodeId, kind: 'bcd.doctor', timeoutSeconds });
  await expect
    .poll(() => session.commands().some((c) => verifiedCommand(c, r.h.crypto.commandTrustBundle).commandId === command!.id), {
      timeout: 5_000,
    })
    .toBe(true);
  return command!.id;
}

const refused = (answer: { status: number; body: Buffer }) =>
  answer.status === RESULT_REFUSED.status && answer.body.equals(RESULT_REFUSED.body);
const state = async (id: string) => (await testDb().nodeCommand.findUniqueOrThrow({ where: { id } })).state;

describe('the result endpoint', () => {
  it('refuses malformed and oversized bodies with the uniform bytes, and still takes a good one', async () => {
    const { nodeId, session } = await connectedNode();
    const id = await sentTo(nodeId, session);
    const bodies = [
      '',
      'null',
      '[]',
      '{',
      '{"status":"succeeded"}',
      '{"status":"done","output":{}}',
      '{"status":"succeeded","output":[]}',
      '{"status":"succeeded","output":{},"extra":1}',
      Buffer.from([0xff, 0xfe, 0x00]),
      JSON.stringify({ status: 'succeeded', output: { big: 'x'.repeat(64 * 1024) } }),
      'x'.repeat(200 * 1024),
    ];
    for (const body of bodies) expect(refused(await session.postResult(id, body))).toBe(true);
    expect(await state(id)).toBe('sent');
    // A path that is not a command id is not a route at all.
    expect((await session.postResult('cmd_../../x', '{}')).status).toBe(404);
    expect((await session.postResult(id, JSON.stringify({ status: 'failed', output: { error: 'disk' } }))).status).toBe(204);
    expect(await state(id)).toBe('failed');
    const reasons = await testDb().event.findMany({ where: { tenantId: t.tenantId, type: 'security.command.result-refused' } });
    expect(reasons.map((e) => (e.data as { reason: string }).reason)).toContain('malformed');
  });

  it('refuses a result from another node’s certificate, and for a command never sent', async () => {
    const a = await connectedNode();
    const b = await connectedNode();
    const id = await sentTo(a.nodeId, a.session);
    expect(refused(await b.session.postResult(id, JSON.stringify({ status: 'succeeded', output: {} })))).toBe(true);
    expect(refused(await b.session.postResult('cmd_0000000000000000000000000', JSON.stringify({ status: 'succeeded', output: {} })))).toBe(
      true,
    );
    expect(await state(id)).toBe('sent');
    const [event] = await testDb().event.findMany({
      where: { tenantId: t.tenantId, type: 'security.command.result-refused', data: { path: ['commandId'], equals: id } },
    });
    expect(event?.data).toMatchObject({ reason: 'not-sent-to-certificate', nodeId: b.nodeId });
  });

  it('stores exactly one of two results that race for one command', async () => {
    const { nodeId, session } = await connectedNode();
    for (let i = 0; i < 3; i++) {
      const id = await sentTo(nodeId, session);
      const answers = await Promise.all(
        ['succeeded', 'failed', 'succeeded', 'rejected'].map((status) => session.postResult(id, JSON.stringify({ status, output: {} }))),
      );
      expect(answers.filter((a) => a.status === 204)).toHaveLength(1);
      expect(answers.filter(refused)).toHaveLength(3);
    }
  });

  it('refuses a node past its rate, across instances (the limit lives in PostgreSQL)', async () => {
    const { nodeId, session } = await connectedNode();
    const id = await sentTo(nodeId, session);
    // Two API instances' services on one database, with a small limit of their own, called as the gateway calls.
    const rate = { ...COMMAND_RESULT_RATE, keyPrefix: `command-result-${nodeId}`, limit: 5 };
    const loadRuntime = () => r.h.services.pki.load();
    const instances = [0, 1].map(() => new CommandResultService({ pool: r.h.pool, loadRuntime, rate }));
    const voucher = voucherFromServingChain(r.gatewayCert.chainPem, r.gatewayCert.privateKeyPem);
    const leaf = (await testDb().nodeCert.findFirstOrThrow({ where: { nodeId } })).der;
    const route = `/v1/commands/${id}/result`;
    const call = (body: string) => {
      const bytes = Buffer.from(body);
      const headers = vouchHeaders(voucher, Buffer.from(leaf), bytes, `${BASE}${route}`);
      return { body: bytes, vouch: headers[VOUCH_HEADER], peer: headers[PEER_HEADER], path: `${BASE}${route}`, route };
    };
    // A flood of junk counts too (the limit is taken before the body is parsed), spread over both instances.
    const flood = await Promise.all(Array.from({ length: 12 }, (_, i) => instances[i % 2]!.answer(call('junk'))));
    expect(flood.every(refused)).toBe(true);
    const good = JSON.stringify({ status: 'succeeded', output: {} });
    expect(refused(await instances[0]!.answer(call(good)))).toBe(true);
    expect(refused(await instances[1]!.answer(call(good)))).toBe(true);
    expect(await state(id)).toBe('sent');
    const limited = await testDb().event.findMany({
      where: { tenantId: t.tenantId, type: 'security.command.result-refused', data: { path: ['reason'], equals: 'rate-limited' } },
    });
    expect(limited.some((e) => (e.data as { nodeId: string }).nodeId === nodeId)).toBe(true);
    // Another node is not limited by this one's flood; and the real API (its own limit) takes the answer.
    expect((await session.postResult(id, good)).status).toBe(204);
  });
});

describe('expiry', () => {
  it('ends a command never delivered before its deadline, and one never answered within its time limit', async () => {
    const { nodeId, session } = await connectedNode();
    const answered = await sentTo(nodeId, session, 10);
    const unanswered = await sentTo(nodeId, session, 10);
    expect((await session.postResult(answered, JSON.stringify({ status: 'succeeded', output: {} }))).status).toBe(204);
    // A node with no session: queued until its deadline.
    const { answer } = await joinThroughGateway(r, (await mintToken(t, { maxUses: 1 })).token!);
    const { command } = await enqueueCommand(testDb(), t.operator, { nodeId: answer.nodeId, kind: 'bcd.renew' });
    expect(command!.state).toBe('queued');
    await expireCommands(r.h.pool);
    expect(await state(command!.id)).toBe('queued');
    // Time passes (the rows are moved back rather than the clock forward).
    await testDb().$executeRaw`UPDATE node_commands SET not_after = now() - interval '1 second' WHERE id = ${command!.id}`;
    await testDb().$executeRaw`UPDATE node_commands SET sent_at = now() - interval '11 seconds' WHERE id IN (${unanswered}, ${answered})`;
    await expireCommands(r.h.pool);
    expect(await testDb().nodeCommand.findUniqueOrThrow({ where: { id: command!.id } })).toMatchObject({
      state: 'expired',
      reason: 'not-delivered',
    });
    expect(await testDb().nodeCommand.findUniqueOrThrow({ where: { id: unanswered } })).toMatchObject({
      state: 'expired',
      reason: 'not-answered',
    });
    expect(await state(answered)).toBe('succeeded');
    // A late answer is refused.
    expect(refused(await session.postResult(unanswered, JSON.stringify({ status: 'succeeded', output: {} })))).toBe(true);
  });
});

// Only a live certificate counts: a result from an expired or superseded (older identity generation) certificate
// is refused as a revoked one's is, and a node whose certificates all expired is not sent a command.
const refusalOf = async (commandId: string) =>
  (
    await testDb().event.findFirst({
      where: { tenantId: t.tenantId, type: 'security.command.result-refused', data: { path: ['commandId'], equals: commandId } },
    })
  )?.data as { reason: string } | undefined;
const succeeded = JSON.stringify({ status: 'succeeded', output: {} });

describe('results need a live certificate', () => {
  it('refuses a result from an expired certificate with the uniform bytes', async () => {
    const { nodeId, session } = await connectedNode();
    const commandId = await sentTo(nodeId, session, 600);
    await testDb().$executeRaw`UPDATE node_certs SET not_after = now() - interval '1 second' WHERE node_id = ${nodeId}`;
    const answer = await session.postResult(commandId, succeeded);
    expect(answer.status).toBe(RESULT_REFUSED.status);
    expect(answer.body.equals(RESULT_REFUSED.body)).toBe(true);
    expect(await refusalOf(commandId)).toMatchObject({ reason: 'expired' });
    expect((await testDb().nodeCommand.findUniqueOrThrow({ where: { id: commandId } })).state).toBe('sent');
  });

  it('refuses a result from a certificate of an older identity generation', async () => {
    const { nodeId, session } = await connectedNode();
    const commandId = await sentTo(nodeId, session, 600);
    await testDb().$executeRaw`UPDATE nodes SET identity_generation = identity_generation + 1 WHERE id = ${nodeId}`;
    const answer = await session.postResult(commandId, succeeded);
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

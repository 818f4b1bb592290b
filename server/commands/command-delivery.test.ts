import { describe, expect, it } from 'vitest';
import { RESULT_REFUSED } from '../../protocol/command-wire';
import { testDb } from '../../test/db';
import { failure, type TestTenant } from '../../test/fixtures';
import type { RenewHarness } from '../../test/renew-harness';
import { verifiedCommand } from '../../test/command-session';
import { useCommandTestbed, type CommandTestbed } from '../../test/command-testbed';
import { newId } from '../ids';
import { enqueueCommand } from './enqueue';
import { getCommand } from './queries';

// Commands (protocol.md "Commands") through a real gateway in front of the agent endpoints, on the test
// PostgreSQL: enqueue, the signed `command` event on the node's session, the result on the same connection.

let r: RenewHarness;
let t: TestTenant;
let connectedNode: CommandTestbed['connectedNode'];
let welcomedSession: CommandTestbed['welcomedSession'];
useCommandTestbed((bed) => ({ r, t, connectedNode, welcomedSession } = bed));

const row = (id: string) => testDb().nodeCommand.findUniqueOrThrow({ where: { id } });
const events = (type: string, commandId: string) =>
  testDb().event.findMany({ where: { tenantId: t.tenantId, type, data: { path: ['commandId'], equals: commandId } } });

describe('a command to a connected node', () => {
  it('arrives signed on its session, and its result on the same connection is stored once', async () => {
    const { nodeId, session } = await connectedNode();
    const { command } = await enqueueCommand(testDb(), t.operator, { nodeId, kind: 'bcd.doctor', timeoutSeconds: 60 });
    expect(command).toMatchObject({ nodeId, kind: 'bcd.doctor', state: 'queued', createdBy: t.operator.actor });
    // The enqueue's announcement makes the gateway call at once: well before its scheduled lease call.
    await expect.poll(() => session.commands().length, { timeout: 5_000 }).toBe(1);
    const body = verifiedCommand(session.commands()[0]!, r.h.crypto.commandTrustBundle);
    expect(body).toEqual({
      status: 'command',
      commandId: command!.id,
      nodeId,
      kind: 'bcd.doctor',
      args: {},
      notAfter: Math.floor(new Date(command!.notAfter).getTime() / 1000),
    });
    const sent = await row(command!.id);
    expect(sent.state).toBe('sent');
    expect(sent.sessionId).toMatch(/^sess_/);
    expect(sent.certSerial).toBeTruthy();

    const answered = await session.postResult(command!.id, JSON.stringify({ status: 'succeeded', output: { checks: [{ ok: true }] } }));
    expect(answered.status).toBe(204);
    const done = await getCommand(testDb(), t.viewer, { commandId: command!.id });
    expect(done).toMatchObject({ state: 'succeeded', output: { checks: [{ ok: true }] } });
    expect(done.finishedAt).not.toBeNull();
    expect(await events('node.command.finished', command!.id)).toHaveLength(1);
    expect(await testDb().auditEntry.count({ where: { action: 'node.command.enqueued', resource: `compute-node/${nodeId}` } })).toBe(1);

    // A second result is refused with the uniform bytes, and changes nothing.
    const again = await session.postResult(command!.id, JSON.stringify({ status: 'failed', output: {} }));
    expect(again.status).toBe(RESULT_REFUSED.status);
    expect(again.body.equals(RESULT_REFUSED.body)).toBe(true);
    expect((await row(command!.id)).state).toBe('succeeded');
  });

  it('is refused at enqueue when its kind is unknown or the certificate does not allow it', async () => {
    const { nodeId } = await connectedNode();
    expect(await failure(enqueueCommand(testDb(), t.operator, { nodeId, kind: 'rm.rf' }))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    await testDb().$executeRaw`UPDATE node_certs SET allowed_kinds = ARRAY['bcd.doctor'] WHERE node_id = ${nodeId}`;
    expect(await failure(enqueueCommand(testDb(), t.operator, { nodeId, kind: 'bcd.renew' }))).toMatchObject({ code: 'INVALID_STATE' });
    await testDb().$executeRaw`UPDATE node_certs SET allowed_kinds = ARRAY[]::text[] WHERE node_id = ${nodeId}`;
    expect(await failure(enqueueCommand(testDb(), t.operator, { nodeId, kind: 'bcd.doctor' }))).toMatchObject({ code: 'INVALID_STATE' });
    // `prefix.*` allows the kinds under it.
    await testDb().$executeRaw`UPDATE node_certs SET allowed_kinds = ARRAY['bcd.*'] WHERE node_id = ${nodeId}`;
    expect((await enqueueCommand(testDb(), t.operator, { nodeId, kind: 'bcd.renew' })).command?.state).toBe('queued');
    expect(await testDb().nodeCommand.count({ where: { nodeId } })).toBe(1);
    // A viewer may not run commands.
    expect(await failure(enqueueCommand(testDb(), t.viewer, { nodeId, kind: 'bcd.renew' }))).toMatchObject({ code: 'ACCESS_DENIED' });
  });

  it('a command of a kind the certificate does not allow that reaches the gateway is dropped there and refused', async () => {
    const { nodeId, identity, session } = await connectedNode();
    // A session opened with a certificate that allows only the doctor (as a ramdisk's does).
    session.close();
    await testDb().$executeRaw`UPDATE node_certs SET allowed_kinds = ARRAY['bcd.doctor'] WHERE node_id = ${nodeId}`;
    const again = await welcomedSession(identity, nodeId);
    // Bypassing enqueue (which would refuse it): a row inserted directly.
    const id = newId('cmd');
    await testDb().$executeRaw`
      INSERT INTO node_commands (id, tenant_id, node_id, kind, created_by, not_after, time_limit_seconds)
      VALUES (${id}, ${t.tenantId}, ${nodeId}, 'bcd.renew', 'test', compute_now() + interval '10 minutes', 60)`;
    await expect.poll(async () => (await row(id)).state, { timeout: 8_000 }).toBe('rejected');
    expect((await row(id)).reason).toBe('kind-not-allowed');
    const [refused] = await events('security.command.refused', id);
    expect(refused?.data).toMatchObject({ commandId: id, nodeId, kind: 'bcd.renew', reason: 'kind-not-allowed' });
    // An allowed one on the same session still arrives, and the dropped one never did.
    const { command } = await enqueueCommand(testDb(), t.operator, { nodeId, kind: 'bcd.doctor' });
    await expect.poll(() => again.commands().length, { timeout: 5_000 }).toBe(1);
    expect(verifiedCommand(again.commands()[0]!, r.h.crypto.commandTrustBundle).commandId).toBe(command!.id);
  });
});

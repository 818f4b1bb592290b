import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadIdentity } from '../../agent/renew/identity';
import type { GatewayTarget } from '../../agent/renew/gateway-client';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { mintToken } from '../../test/join-harness';
import { createRenewHarness, joinThroughGateway, secondInstance, type RenewHarness } from '../../test/renew-harness';
import { openCommandSession, verifiedCommand, type CommandSession } from '../../test/command-session';
import type { Services } from '../boot/services';
import { sessionSettings } from '../sessions/settings';
import { enqueueCommand } from './enqueue';
import { getBatch } from './queries';
import { deliverCommands } from './delivery';
import { signCommand } from './sign';
import { newId } from '../ids';
import { createPrivateKey } from 'node:crypto';

// At most once per command with two API instances and two gateways on one PostgreSQL: every node holds a
// session at each gateway, each gateway relays to its own API instance, and every command arrives once.

let r: RenewHarness;
let t: TestTenant;
let second: Awaited<ReturnType<typeof secondInstance>> | undefined;
let services: Services;
let secondTarget: GatewayTarget;
const open: CommandSession[] = [];

beforeAll(async () => {
  r = await createRenewHarness();
  t = await createTestTenant(testDb());
  // A second API instance (its own services and pool) on the same database and keys, and a gateway in front of it.
  second = await secondInstance(r, { pgPoolMax: 4, sessionSettings: sessionSettings(1, 2) });
  ({ services, target: secondTarget } = second);
});
afterAll(async () => {
  for (const s of open) s.close();
  await second?.close();
  await r?.close();
});

describe('two API instances and two gateways', () => {
  it('send each command once, on one session of its node, and the batch counts every answer', async () => {
    const nodes: Array<{ nodeId: string; sessions: CommandSession[] }> = [];
    const poolId = await t.newPool();
    for (let i = 0; i < 4; i++) {
      const { dir, answer } = await joinThroughGateway(r, (await mintToken(t, { maxUses: 1, poolId })).token!);
      const identity = await loadIdentity(dir);
      const sessions = [
        await openCommandSession(r.target, identity, answer.nodeId),
        await openCommandSession(secondTarget, identity, answer.nodeId),
      ];
      open.push(...sessions);
      for (const s of sessions) await expect.poll(() => s.events.some((e) => e.type === 'welcome'), { timeout: 5_000 }).toBe(true);
      nodes.push({ nodeId: answer.nodeId, sessions });
    }
    // Several batches to the pool at once, from both instances' points of view (the enqueue is a domain call).
    const batches = await Promise.all(
      Array.from({ length: 6 }, () =>
        enqueueCommand(testDb(), t.operator, { tenantId: t.tenantId, matching: { poolId }, kind: 'bcd.doctor' }),
      ),
    );
    for (const { batch } of batches) expect(batch).toMatchObject({ total: 4, kind: 'bcd.doctor' });
    const all = () => nodes.flatMap((n) => n.sessions.flatMap((s) => s.commands().map((c) => ({ n, s, c }))));
    await expect.poll(() => all().length, { timeout: 10_000 }).toBe(24);
    // A moment more: nothing arrives twice.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const received = all();
    expect(received).toHaveLength(24);
    const ids = received.map(({ c }) => verifiedCommand(c, r.h.crypto.commandTrustBundle).commandId);
    expect(new Set(ids).size).toBe(24);
    for (const { n, c } of received) expect(verifiedCommand(c, r.h.crypto.commandTrustBundle).nodeId).toBe(n.nodeId);
    // Both gateways delivered some (each node's commands went to whichever held it first).
    const rows = await testDb().nodeCommand.findMany({ where: { id: { in: ids } } });
    expect(rows.every((row) => row.state === 'sent')).toBe(true);
    // Each result, on the session that received it, is stored.
    for (const { s, c } of received) {
      const id = verifiedCommand(c, r.h.crypto.commandTrustBundle).commandId;
      expect((await s.postResult(id, JSON.stringify({ status: 'succeeded', output: {} }))).status).toBe(204);
    }
    const progress = await getBatch(testDb(), t.viewer, { batchId: batches[0]!.batch!.id });
    expect(progress).toMatchObject({ total: 4, done: true, counts: { succeeded: 4, queued: 0, sent: 0 } });
  });
});

describe('delivery racing on two pools', () => {
  it('marks each command sent once, however many lease calls of two gateways race for it', async () => {
    const gateways = [`gw_${newId('t').slice(2)}`, `gw_${newId('t').slice(2)}`];
    for (const id of gateways)
      await testDb().$executeRaw`INSERT INTO gateway_leases (gateway_id, started_at, heartbeat_at, expires_at)
        VALUES (${id}, now(), now(), now() + interval '10 minutes')`;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { answer } = await joinThroughGateway(r, (await mintToken(t, { maxUses: 1 })).token!);
      // A session of this node at each gateway, and 40 queued commands.
      for (const gatewayId of gateways)
        await testDb().$executeRaw`INSERT INTO node_sessions (id, node_id, cert_serial, gateway_id, agent_version, opened_at)
          VALUES (${newId('sess')}, ${answer.nodeId}, 'serial', ${gatewayId}, 'test', now())`;
      for (let k = 0; k < 40; k++) {
        const id = newId('cmd');
        ids.push(id);
        await testDb().$executeRaw`INSERT INTO node_commands (id, tenant_id, node_id, kind, created_by, not_after, time_limit_seconds)
          VALUES (${id}, ${t.tenantId}, ${answer.nodeId}, 'bcd.doctor', 'test', now() + interval '10 minutes', 60)`;
      }
    }
    const signer = { key: createPrivateKey(r.h.bundle.commandCa.privateKeyPem) };
    const pools = [r.h.pool, services.pg];
    const delivered: string[] = [];
    // Small answers, many calls at once: both gateways on both instances, until nothing is left.
    for (let round = 0; round < 20 && delivered.length < ids.length; round++) {
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => deliverCommands(pools[i % 2]!, gateways[Math.floor(i / 2) % 2]!, signer, 5)),
      );
      for (const answer of answers)
        for (const c of answer.commands) delivered.push(verifiedCommand(c.event, r.h.crypto.commandTrustBundle).commandId);
    }
    expect(delivered.sort()).toEqual([...ids].sort());
    expect(
      signCommand(signer, { status: 'command', commandId: ids[0]!, nodeId: 'node_x', kind: 'bcd.doctor', args: {}, notAfter: 1 }).sigs,
    ).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { loadIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import { runRenewalLoop } from '../../agent/renew/loop';
import { testDb } from '../../test/db';
import { failure, type TestTenant } from '../../test/fixtures';
import { machineClaims, mintToken } from '../../test/join-harness';
import { joinedRamdisk, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { useCommandTestbed, type CommandTestbed } from '../../test/command-testbed';
import { principalOf } from '../authz/principal';
import { newId } from '../ids';
import { createPool } from '../pools/pools';
import { createSite } from '../sites/sites';
import { enqueueCommand } from './enqueue';

// Allowed kinds (protocol.md "Commands"): set on each certificate by its attestor in the admission, kept by
// renewals, checked at enqueue and by the gateway.

let r: RenewHarness;
let t: TestTenant;
let welcomedSession: CommandTestbed['welcomedSession'];
useCommandTestbed((bed) => ({ r, t, welcomedSession } = bed));

/** The allowed kinds of every certificate of the node, oldest first (undefined: none written yet). */
const allowedKinds = async (nodeId: string) =>
  (
    await testDb().$queryRaw<Array<{ allowed_kinds: string[] | null }>>`
      SELECT allowed_kinds FROM node_certs WHERE node_id = ${nodeId} ORDER BY created_at, serial`
  ).map((row) => row.allowed_kinds);

const renew = async (dir: string) => expect(await runRenewalLoop({ identityDir: dir, ...r.target, once: true, log: () => {} })).toBe(0);

async function ramdisk(): Promise<{ dir: string; id: LoadedIdentity; nodeId: string }> {
  const { dir, answer, id } = await joinedRamdisk(r, t);
  return { dir, id, nodeId: answer.nodeId };
}

describe('allowed kinds on certificates', () => {
  it('a ramdisk’s certificate allows only the doctor: bcd.renew is refused at enqueue, and renewal keeps the list', async () => {
    const { dir, nodeId } = await ramdisk();
    expect(await allowedKinds(nodeId)).toEqual([['bcd.doctor']]);
    expect(await failure(enqueueCommand(testDb(), t.operator, { nodeId, kind: 'bcd.renew' }))).toMatchObject({
      code: 'INVALID_STATE',
      message: expect.stringContaining('does not allow bcd.renew'),
    });
    expect(await failure(enqueueCommand(testDb(), t.operator, { nodeId, kind: 'trust.refresh' }))).toMatchObject({ code: 'INVALID_STATE' });
    expect((await enqueueCommand(testDb(), t.operator, { nodeId, kind: 'bcd.doctor' })).command?.state).toBe('queued');
    await renew(dir);
    expect(await allowedKinds(nodeId)).toEqual([['bcd.doctor'], ['bcd.doctor']]);
    expect(await failure(enqueueCommand(testDb(), t.operator, { nodeId, kind: 'bcd.renew' }))).toMatchObject({ code: 'INVALID_STATE' });
  });

  it('a node’s certificate has no restriction, and renewal keeps a list its row holds', async () => {
    const { dir, answer } = await joinThroughGateway(r, (await mintToken(t, { maxUses: 1 })).token!);
    expect(await allowedKinds(answer.nodeId)).toEqual([null]);
    await renew(dir);
    expect(await allowedKinds(answer.nodeId)).toEqual([null, null]);
    await testDb().$executeRaw`UPDATE node_certs SET allowed_kinds = ARRAY['trust.*'] WHERE node_id = ${answer.nodeId}`;
    await renew(dir);
    expect(await allowedKinds(answer.nodeId)).toEqual([['trust.*'], ['trust.*'], ['trust.*']]);
  });

  it('a hosted token’s node-tenant certificate allows nothing: it is refused every kind and receives no command', async () => {
    const root = principalOf('operator', 'op_root_test', [[r.h.rootTenantId, 'admin']]);
    const site = await createSite(testDb(), root, { tenantId: r.h.rootTenantId, name: `plat-${newId('s').slice(2)}`, kind: 'platform' });
    const pool = await createPool(testDb(), root, { tenantId: r.h.rootTenantId, siteId: site.id, name: 'k8s', agent: 'bcd' });
    const rootTenant = { tenantId: r.h.rootTenantId, admin: root, site, pool } as unknown as TestTenant;
    const { dir, answer } = await joinThroughGateway(r, (await mintToken(rootTenant, { hosted: 'kubernetes' })).token!, machineClaims(), {
      expectedRole: 'node-tenant',
    });
    const nodeId = answer.nodeId;
    expect(await allowedKinds(nodeId)).toEqual([[]]);
    for (const kind of ['bcd.doctor', 'bcd.renew', 'trust.refresh'])
      expect(await failure(enqueueCommand(testDb(), root, { nodeId, kind }))).toMatchObject({ code: 'INVALID_STATE' });
    const session = await welcomedSession(await loadIdentity(dir), nodeId);
    // One that reaches the gateway anyway (a row written past enqueue) is dropped there.
    const id = newId('cmd');
    await testDb().$executeRaw`
      INSERT INTO node_commands (id, tenant_id, node_id, kind, created_by, not_after, time_limit_seconds)
      VALUES (${id}, ${r.h.rootTenantId}, ${nodeId}, 'bcd.doctor', 'test', compute_now() + interval '10 minutes', 60)`;
    await expect
      .poll(async () => (await testDb().nodeCommand.findUniqueOrThrow({ where: { id } })).state, { timeout: 8_000 })
      .toBe('rejected');
    expect(session.commands()).toEqual([]);
    await renew(dir);
    expect(await allowedKinds(nodeId)).toEqual([[], []]);
  });
});

import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { JOIN_REFUSED } from '../../protocol/join-wire';
import { DomainError } from '../../protocol/errors';
import { createSite } from '../sites/sites';
import { issueJoinToken } from '../tokens/issue';
import { createPkiSurface } from './pki-surface';

// Provisioned joins (joining.md "Token roles"): a single-use token bound to one node reclaims exactly that node.

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = () => testDb();
const pki = () => createPkiSurface(testDb());

const eventsOf = (tenantId: string, type: string) => db().event.findMany({ where: { tenantId, type }, orderBy: { id: 'asc' } });
const reasonsOf = async (tenantId: string) =>
  (await eventsOf(tenantId, 'security.join.refused')).map((e) => (e.data as { reason: string }).reason);

async function joinedMachine(t: TestTenant, claims = machineClaims()) {
  const first = await agentJoin(h, (await mintToken(t)).token!, claims);
  expect(first.status).toBe(200);
  const nodeId = first.answer!.nodeId;
  const serial = (await db().nodeCert.findFirstOrThrow({ where: { nodeId } })).serial;
  return { claims, nodeId, serial };
}

const provisionedToken = async (t: TestTenant, nodeId: string, poolId = t.poolId) =>
  (
    await pki().issueJoinToken({
      role: 'provisioned',
      tenantId: t.tenantId,
      siteId: t.siteId,
      poolId,
      nodeId,
      ttlSeconds: 600,
      createdBy: 'module:test',
    })
  ).token!;

/** The uniform refusal, recorded with `reason` in `tenantId`, and nothing about `nodeId` changed. */
async function expectRefused(result: Awaited<ReturnType<typeof agentJoin>>, tenantId: string, reason: string) {
  expect(result.status).toBe(403);
  expect(result.bytes.equals(JOIN_REFUSED.body)).toBe(true);
  expect(await reasonsOf(tenantId)).toContain(reason);
}

describe('issueJoinToken: the node binding', () => {
  it('binds a provisioned token to its node and refuses one without, or a node id on another role', async () => {
    const t = await createTestTenant(db());
    const known = await joinedMachine(t);
    const issued = await pki().issueJoinToken({
      role: 'provisioned',
      tenantId: t.tenantId,
      siteId: t.siteId,
      poolId: t.poolId,
      nodeId: known.nodeId,
      ttlSeconds: 600,
      createdBy: 'module:test',
    });
    const row = await db().joinToken.findUniqueOrThrow({ where: { id: issued.record.id } });
    expect(row).toMatchObject({ role: 'provisioned', nodeId: known.nodeId, maxUses: 1, usesLeft: 1 });
    const base = { tenantId: t.tenantId, siteId: t.siteId, poolId: t.poolId, ttlSeconds: 600, maxUses: 1, createdBy: 'module:test' };
    await expect(db().$transaction((tx) => issueJoinToken(tx, { ...base, role: 'provisioned' }))).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'nodeId',
    });
    await expect(db().$transaction((tx) => issueJoinToken(tx, { ...base, role: 'node', nodeId: known.nodeId }))).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'nodeId',
    });
  });

  it("refuses another tenant's node as NOT_FOUND, and a node id conflicts on an idempotent replay", async () => {
    const t = await createTestTenant(db());
    const other = await createTestTenant(db());
    const theirs = await joinedMachine(other);
    const mine = await joinedMachine(t);
    const second = await joinedMachine(t);
    const input = {
      role: 'provisioned' as const,
      tenantId: t.tenantId,
      siteId: t.siteId,
      poolId: t.poolId,
      ttlSeconds: 600,
      createdBy: 'module:test',
    };
    const error = await pki()
      .issueJoinToken({ ...input, nodeId: theirs.nodeId })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ code: 'NOT_FOUND' });
    const key = randomUUID();
    const first = await pki().issueJoinToken({ ...input, nodeId: mine.nodeId, idempotencyKey: key });
    const replay = await pki().issueJoinToken({ ...input, nodeId: mine.nodeId, idempotencyKey: key });
    expect(replay.token).toBeUndefined();
    expect(replay.record.id).toBe(first.record.id);
    await expect(pki().issueJoinToken({ ...input, nodeId: second.nodeId, idempotencyKey: key })).rejects.toMatchObject({
      code: 'CONFLICT',
      field: 'nodeId',
    });
  });
});

describe('a provisioned join', () => {
  it('reclaims the node it names: generation + 1, older certificates reclaimed, node.reclaimed, single use', async () => {
    const t = await createTestTenant(db());
    const known = await joinedMachine(t);
    const token = await provisionedToken(t, known.nodeId);
    // The re-imaged machine: the same hardware, a new key, no allowReclaim.
    const result = await agentJoin(h, token, known.claims, { role: 'provisioned' });
    expect(result.status).toBe(200);
    expect(result.answer!.nodeId).toBe(known.nodeId);
    expect(await db().node.findUniqueOrThrow({ where: { id: known.nodeId } })).toMatchObject({ identityGeneration: 2 });
    const certs = await db().nodeCert.findMany({ where: { nodeId: known.nodeId }, orderBy: { identityGeneration: 'asc' } });
    expect(certs.map((c) => [c.identityGeneration, c.revocationReason])).toEqual([
      [1, 'reclaimed'],
      [2, null],
    ]);
    const revoked = await eventsOf(t.tenantId, 'security.certificate-revoked');
    expect(revoked.map((e) => e.data)).toEqual([{ nodeId: known.nodeId, serial: known.serial, reason: 'reclaimed' }]);
    const audit = await db().auditEntry.findMany({
      where: { tenantId: t.tenantId, resource: `compute-node/${known.nodeId}` },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((a) => a.action)).toEqual(['node.joined', 'node.reclaimed']);
    expect(await db().node.count({ where: { tenantId: t.tenantId } })).toBe(1);

    // Single use: the same token again is the uniform refusal.
    const again = await agentJoin(h, token, known.claims, { role: 'provisioned' });
    await expectRefused(again, t.tenantId, 'join-token:exhausted');
    expect(await db().node.findUniqueOrThrow({ where: { id: known.nodeId } })).toMatchObject({ identityGeneration: 2 });
  });

  it('reclaims a node whose machine changed, taking the new machine key, and moves it to the token pool', async () => {
    const t = await createTestTenant(db());
    const known = await joinedMachine(t);
    const poolB = await t.newPool();
    const claims = machineClaims();
    const result = await agentJoin(h, await provisionedToken(t, known.nodeId, poolB), claims, { role: 'provisioned' });
    expect(result.status).toBe(200);
    expect(result.answer!.nodeId).toBe(known.nodeId);
    const node = await db().node.findUniqueOrThrow({ where: { id: known.nodeId } });
    expect(node).toMatchObject({ identityGeneration: 2, poolId: poolB, hardwareKeyTrusted: true });
    // The machine is that node now: a later allowReclaim join of it finds the node by its key.
    const reclaim = await agentJoin(h, (await mintToken(t, { poolId: poolB, allowReclaim: true })).token!, claims);
    expect(reclaim.status).toBe(200);
    expect(reclaim.answer!.nodeId).toBe(known.nodeId);
  });

  it('refuses every other case with the uniform refusal and its own reason, spending nothing', async () => {
    const t = await createTestTenant(db());
    const known = await joinedMachine(t);

    // A provisioned token presented as another role, and a node token presented as provisioned.
    const asNode = await provisionedToken(t, known.nodeId);
    await expectRefused(await agentJoin(h, asNode, known.claims), t.tenantId, 'join-token:role-mismatch');
    const nodeToken = (await mintToken(t)).token!;
    await expectRefused(await agentJoin(h, nodeToken, machineClaims(), { role: 'provisioned' }), t.tenantId, 'join-token:role-mismatch');

    // The machine's trusted key belongs to a different node of the tenant.
    const other = await joinedMachine(t);
    await expectRefused(
      await agentJoin(h, await provisionedToken(t, known.nodeId), other.claims, { role: 'provisioned' }),
      t.tenantId,
      'join:provisioned-other-machine',
    );

    // The node was retired after the token was minted.
    const retiring = await joinedMachine(t);
    const retiredToken = await provisionedToken(t, retiring.nodeId);
    await db().node.update({ where: { id: retiring.nodeId }, data: { state: 'retired' } });
    await expectRefused(await agentJoin(h, retiredToken, machineClaims(), { role: 'provisioned' }), t.tenantId, 'join:provisioned-retired');

    // The node no longer exists.
    const gone = await joinedMachine(t);
    const goneToken = await provisionedToken(t, gone.nodeId);
    await db().nodeCert.deleteMany({ where: { nodeId: gone.nodeId } });
    await db().nodeSession.deleteMany({ where: { nodeId: gone.nodeId } });
    await db().nodeAcceptanceRun.deleteMany({ where: { nodeId: gone.nodeId } });
    await db().node.delete({ where: { id: gone.nodeId } });
    await expectRefused(await agentJoin(h, goneToken, machineClaims(), { role: 'provisioned' }), t.tenantId, 'join:provisioned-missing');

    // The node moved to another site than the token's.
    const moved = await joinedMachine(t);
    const movedToken = await provisionedToken(t, moved.nodeId);
    const siteB = await createSite(db(), t.admin, { tenantId: t.tenantId, name: `site-b-${randomUUID().slice(0, 6)}` });
    await db().node.update({ where: { id: moved.nodeId }, data: { siteId: siteB.id } });
    await expectRefused(await agentJoin(h, movedToken, machineClaims(), { role: 'provisioned' }), t.tenantId, 'join:provisioned-elsewhere');

    // Nothing was spent or reclaimed by any of them.
    const tokens = await db().joinToken.findMany({ where: { tenantId: t.tenantId, role: 'provisioned' } });
    expect(tokens.map((x) => x.usesLeft)).toEqual(tokens.map(() => 1));
    expect(await db().node.findUniqueOrThrow({ where: { id: known.nodeId } })).toMatchObject({ identityGeneration: 1 });
    expect(await eventsOf(t.tenantId, 'security.certificate-revoked')).toHaveLength(0);
  });
});

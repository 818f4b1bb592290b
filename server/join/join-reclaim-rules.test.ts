import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { joinedMachine } from '../../test/join-machines';
import { archivePool, createPool } from '../pools/pools';
import { createSite } from '../sites/sites';
import { issueJoinToken } from '../tokens/issue';
import { JOIN_REFUSED } from '../../protocol/join-wire';

// Reclaim rules of joining.md ("Placeholder hardware and reclaims") that join-rules.test.ts does not cover:
// it tests the allowed reclaim and another pool; join-hosted.test.ts the reclaims through hosted tokens.

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = () => testDb();

const eventsOf = (tenantId: string, type: string) => db().event.findMany({ where: { tenantId, type }, orderBy: { id: 'asc' } });
const reasonsOf = async (tenantId: string) =>
  (await eventsOf(tenantId, 'security.join.refused')).map((e) => (e.data as { reason: string }).reason);

/** The known node is untouched by a refused reclaim: same tenant, generation 1, its one certificate live. */
async function expectUntouched(nodeId: string, tenantId: string, serial: string) {
  expect(await db().node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ tenantId, identityGeneration: 1 });
  const certs = await db().nodeCert.findMany({ where: { nodeId } });
  expect(certs.map((c) => ({ serial: c.serial, revokedAt: c.revokedAt }))).toEqual([{ serial, revokedAt: null }]);
  expect(await eventsOf(tenantId, 'security.certificate-revoked')).toHaveLength(0);
}

describe('reclaim refusals', () => {
  it('refuses a reclaim by a token of another tenant, recorded in the token tenant', async () => {
    const owner = await createTestTenant(db());
    const known = await joinedMachine(h, owner);
    const other = await createTestTenant(db());
    const minted = await mintToken(other, { allowReclaim: true });

    const result = await agentJoin(h, minted.token!, known.claims);
    expect(result.status).toBe(403);
    expect(result.bytes.equals(JOIN_REFUSED.body)).toBe(true);
    expect(await reasonsOf(other.tenantId)).toEqual(['join:reclaim']);
    expect(await reasonsOf(owner.tenantId)).toEqual([]);
    expect((await db().joinToken.findUniqueOrThrow({ where: { id: minted.id } })).usesLeft).toBe(1);
    expect(await db().node.count({ where: { tenantId: other.tenantId } })).toBe(0);
    await expectUntouched(known.nodeId, owner.tenantId, known.serial);
  });

  it('refuses a reclaim by a token whose tenant alone differs from the node (a pool that changed owner)', async () => {
    // Through public functions another tenant's token also names another site and pool; rows written
    // directly isolate the tenant rule: the node's pool now belongs to `other`, whose token names it.
    // Without the tenant rule the join would reclaim (and keep) a node of `owner`.
    const owner = await createTestTenant(db());
    const known = await joinedMachine(h, owner);
    const other = await createTestTenant(db());
    const minted = await mintToken(owner, { allowReclaim: true });
    await db().pool.update({ where: { id: owner.poolId }, data: { ownerTenantId: other.tenantId } });
    await db().joinToken.update({ where: { id: minted.id }, data: { tenantId: other.tenantId } });

    expect((await agentJoin(h, minted.token!, known.claims)).status).toBe(403);
    expect(await reasonsOf(other.tenantId)).toEqual(['join:reclaim']);
    expect(await reasonsOf(owner.tenantId)).toEqual([]);
    expect((await db().joinToken.findUniqueOrThrow({ where: { id: minted.id } })).usesLeft).toBe(1);
    await expectUntouched(known.nodeId, owner.tenantId, known.serial);
  });

  it('refuses a reclaim by a token of another site of the same tenant', async () => {
    const t = await createTestTenant(db());
    const known = await joinedMachine(h, t);
    const siteB = await createSite(db(), t.admin, { tenantId: t.tenantId, name: `site-b-${randomBytes(3).toString('hex')}` });
    const poolB = await createPool(db(), t.admin, { tenantId: t.tenantId, siteId: siteB.id, name: 'pool-b', agent: 'bcd' });
    const minted = await mintToken(t, { poolId: poolB.id, allowReclaim: true });

    const result = await agentJoin(h, minted.token!, known.claims);
    expect(result.status).toBe(403);
    expect(await reasonsOf(t.tenantId)).toEqual(['join:reclaim']);
    expect((await db().joinToken.findUniqueOrThrow({ where: { id: minted.id } })).usesLeft).toBe(1);
    expect(await db().node.count({ where: { tenantId: t.tenantId } })).toBe(1);
    await expectUntouched(known.nodeId, t.tenantId, known.serial);
  });

  it('refuses a reclaim by a token whose site alone differs from the node, as a reclaim refusal', async () => {
    // A pool belongs to one site, so only a row written directly separates the site rule from the pool rule.
    // Without the site rule this join would pass the reclaim rules and be refused later as `join:site`.
    const t = await createTestTenant(db());
    const known = await joinedMachine(h, t);
    const siteB = await createSite(db(), t.admin, { tenantId: t.tenantId, name: `site-b-${randomBytes(3).toString('hex')}` });
    const minted = await mintToken(t, { allowReclaim: true });
    await db().joinToken.update({ where: { id: minted.id }, data: { siteId: siteB.id } });

    expect((await agentJoin(h, minted.token!, known.claims)).status).toBe(403);
    expect(await reasonsOf(t.tenantId)).toEqual(['join:reclaim']);
    await expectUntouched(known.nodeId, t.tenantId, known.serial);
  });

  it('refuses a reclaim for another role, and allows it for the same one', async () => {
    const t = await createTestTenant(db());
    const claims = machineClaims();
    // The operating system a deploy installed is a node of role `provisioned`: a provisioned token names an
    // existing node, so the row is written directly to isolate the role rule.
    const { nodeId, serial } = await joinedMachine(h, t, claims);
    await db().node.update({ where: { id: nodeId }, data: { role: 'provisioned' } });

    // A `node` token of the same tenant, site and pool, with allowReclaim: another role.
    const minted = await mintToken(t, { allowReclaim: true });
    expect((await agentJoin(h, minted.token!, claims)).status).toBe(403);
    expect(await reasonsOf(t.tenantId)).toEqual(['join:reclaim']);
    expect((await db().joinToken.findUniqueOrThrow({ where: { id: minted.id } })).usesLeft).toBe(1);
    await expectUntouched(nodeId, t.tenantId, serial);

    // The same machine through a `provisioned` token (it names the node; no allowReclaim needed) reclaims its node.
    const provisioned = (
      await db().$transaction((tx) =>
        issueJoinToken(tx, {
          tenantId: t.tenantId,
          poolId: t.poolId,
          siteId: t.siteId,
          role: 'provisioned',
          nodeId,
          ttlSeconds: 600,
          maxUses: 1,
          createdBy: 'module:deploy',
        }),
      )
    ).token!;
    const again = await agentJoin(h, provisioned, claims, { role: 'provisioned', expectedRole: 'node' });
    expect(again.status).toBe(200);
    expect(again.answer!.nodeId).toBe(nodeId);
    expect(await db().node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ role: 'provisioned', identityGeneration: 2 });
  });
});

describe('a reclaim through a pool with acceptance checks', () => {
  it('puts the node back to adopting with a new identity generation, revoking the older certificate', async () => {
    const t = await createTestTenant(db(), { pool: { acceptanceChecks: ['gpu-burn'] } });
    const known = await joinedMachine(h, t);
    expect(await db().node.findUniqueOrThrow({ where: { id: known.nodeId } })).toMatchObject({ state: 'adopting', identityGeneration: 1 });
    // Acceptance passed: the node is adopted before the machine is reinstalled.
    await db().node.update({ where: { id: known.nodeId }, data: { state: 'adopted' } });

    const minted = await mintToken(t, { allowReclaim: true });
    const result = await agentJoin(h, minted.token!, known.claims);
    expect(result.status).toBe(200);
    expect(result.answer!.nodeId).toBe(known.nodeId);

    // Acceptance runs again.
    expect(await db().node.findUniqueOrThrow({ where: { id: known.nodeId } })).toMatchObject({
      state: 'adopting',
      identityGeneration: 2,
      tenantId: t.tenantId,
    });
    expect(await eventsOf(t.tenantId, 'node.adopted')).toHaveLength(0);

    const certs = await db().nodeCert.findMany({ where: { nodeId: known.nodeId } });
    expect(certs).toHaveLength(2);
    expect(certs.find((c) => c.serial === known.serial)).toMatchObject({
      identityGeneration: 1,
      revocationReason: 'reclaimed',
      revokedAt: expect.any(Date),
    });
    const fresh = certs.find((c) => c.serial !== known.serial)!;
    expect(fresh).toMatchObject({ identityGeneration: 2, revokedAt: null, role: 'node' });
    expect(Buffer.from(fresh.der).toString('base64')).toBe(result.answer!.certificateChain[0]);

    expect((await eventsOf(t.tenantId, 'security.certificate-revoked')).map((e) => e.data)).toEqual([
      { nodeId: known.nodeId, serial: known.serial, reason: 'reclaimed' },
    ]);
    const joined = await eventsOf(t.tenantId, 'node.joined');
    expect(joined.map((e) => e.data)).toEqual([
      expect.objectContaining({ nodeId: known.nodeId, reclaim: false, identityGeneration: 1 }),
      expect.objectContaining({
        nodeId: known.nodeId,
        reclaim: true,
        identityGeneration: 2,
        certificateSerial: fresh.serial,
        tokenId: minted.id,
      }),
    ]);
    const audit = await db().auditEntry.findMany({
      where: { tenantId: t.tenantId, resource: `compute-node/${known.nodeId}` },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((a) => a.action)).toEqual(['node.joined', 'node.reclaimed']);
    expect(audit[1]).toMatchObject({ actor: `join-token:${minted.id}` });
    expect(audit[1]!.data).toMatchObject({ reclaim: true, certificateSerial: fresh.serial });
    expect((await db().joinToken.findUniqueOrThrow({ where: { id: minted.id } })).usesLeft).toBe(0);
  });
});

describe('join:pool', () => {
  it('refuses a token of a pool archived after it was minted, consuming nothing', async () => {
    const t = await createTestTenant(db());
    const minted = await mintToken(t, { maxUses: 2 });
    await archivePool(db(), t.admin, { tenantId: t.tenantId, poolId: t.poolId });

    const result = await agentJoin(h, minted.token!, machineClaims());
    expect(result.status).toBe(403);
    expect(result.bytes.equals(JOIN_REFUSED.body)).toBe(true);
    expect(await reasonsOf(t.tenantId)).toEqual(['join:pool']);
    expect((await db().joinToken.findUniqueOrThrow({ where: { id: minted.id } })).usesLeft).toBe(2);
    expect(await db().node.count({ where: { tenantId: t.tenantId } })).toBe(0);
  });

  it('refuses a reclaim into an archived pool as join:pool, leaving the node alone', async () => {
    const t = await createTestTenant(db());
    const known = await joinedMachine(h, t);
    const minted = await mintToken(t, { allowReclaim: true });
    await archivePool(db(), t.admin, { tenantId: t.tenantId, poolId: t.poolId });

    expect((await agentJoin(h, minted.token!, known.claims)).status).toBe(403);
    expect(await reasonsOf(t.tenantId)).toEqual(['join:pool']);
    await expectUntouched(known.nodeId, t.tenantId, known.serial);
  });

  it('cannot meet a token whose pool is missing: the schema keeps a pool that a token names', async () => {
    // join_tokens.pool_id references pools(id) without ON DELETE, so the LEFT JOIN's missing-pool branch of
    // `join:pool` is unreachable; this pins that, so the branch gets a test if the constraint ever changes.
    const t = await createTestTenant(db());
    await mintToken(t);
    const client = await h.pool.connect();
    try {
      const error = await client.query('DELETE FROM pools WHERE id = $1', [t.poolId]).then(
        () => null,
        (e: { code?: string; constraint?: string }) => e,
      );
      expect(error).toMatchObject({ code: '23503' });
    } finally {
      client.release();
    }
    expect(await db().pool.count({ where: { id: t.poolId } })).toBe(1);
  });
});

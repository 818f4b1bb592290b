import { beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { joinedMachine, platformPools } from '../../test/join-machines';

// Hosted tokens (joining.md): a platform node joined or reclaimed through one is lowered to tenant-controlled
// with a node-tenant certificate, unless its pool is platform-operated; a tenant's own node is never raised.

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = () => testDb();

describe('hosted tokens', () => {
  it('lowers a platform node to tenant-controlled with a node-tenant certificate unless the pool is platform-operated', async () => {
    const { plain, operated } = await platformPools(h);
    const ordinary = await agentJoin(h, (await mintToken(plain)).token!, machineClaims());
    expect(await db().node.findUniqueOrThrow({ where: { id: ordinary.answer!.nodeId } })).toMatchObject({ trust: 'platform' });

    const hosted = await agentJoin(h, (await mintToken(plain, { hosted: 'kubernetes' })).token!, machineClaims(), {
      expectedRole: 'node-tenant',
    });
    expect(hosted.status).toBe(200);
    expect(hosted.answer!.role).toBe('node-tenant');
    expect(await db().node.findUniqueOrThrow({ where: { id: hosted.answer!.nodeId } })).toMatchObject({
      trust: 'tenant-controlled',
      role: 'node',
    });

    const platformOperated = await agentJoin(h, (await mintToken(operated, { hosted: 'kubernetes' })).token!, machineClaims());
    expect(platformOperated.answer!.role).toBe('node');
    expect(await db().node.findUniqueOrThrow({ where: { id: platformOperated.answer!.nodeId } })).toMatchObject({ trust: 'platform' });

    // A certificate signed ahead from the token's last decision is not used when the decision changed.
    const twice = await mintToken(plain, { hosted: 'kubernetes', maxUses: 2 });
    expect((await agentJoin(h, twice.token!, machineClaims(), { expectedRole: 'node-tenant' })).answer!.role).toBe('node-tenant');
    await db().pool.update({ where: { id: plain.pool.id }, data: { policy: { kubernetes: { platformOperated: true } } } });
    const changed = await agentJoin(h, twice.token!, machineClaims(), { expectedRole: 'node' });
    expect(changed.status).toBe(200);
    expect(changed.answer!.role).toBe('node');

    // A tenant's own site stays tenant-owned: hosted never raises, and only lowers platform trust.
    const t = await createTestTenant(db());
    const tenantHosted = await agentJoin(h, (await mintToken(t, { hosted: 'kubernetes' })).token!, machineClaims());
    expect(await db().node.findUniqueOrThrow({ where: { id: tenantHosted.answer!.nodeId } })).toMatchObject({ trust: 'tenant-owned' });
  });
});

describe('a reclaim through a hosted token', () => {
  it('lowers a platform node to tenant-controlled with a node-tenant certificate', async () => {
    const { plain } = await platformPools(h);
    const claims = machineClaims();
    // First joined through the platform's own pool with an ordinary token: platform trust.
    const first = await agentJoin(h, (await mintToken(plain)).token!, claims);
    expect(first.status).toBe(200);
    const nodeId = first.answer!.nodeId;
    expect(await db().node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ trust: 'platform', role: 'node' });
    const oldSerial = (await db().nodeCert.findFirstOrThrow({ where: { nodeId } })).serial;

    const minted = await mintToken(plain, { hosted: 'kubernetes', allowReclaim: true });
    const result = await agentJoin(h, minted.token!, claims, { expectedRole: 'node-tenant' });
    expect(result.status).toBe(200);
    expect(result.answer).toMatchObject({ nodeId, role: 'node-tenant' });
    expect(await db().node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({
      trust: 'tenant-controlled',
      role: 'node',
      identityGeneration: 2,
    });
    const certs = await db().nodeCert.findMany({ where: { nodeId } });
    expect(certs.find((c) => c.serial === oldSerial)).toMatchObject({ role: 'node', revocationReason: 'reclaimed' });
    expect(certs.find((c) => c.serial !== oldSerial)).toMatchObject({ role: 'node-tenant', identityGeneration: 2, revokedAt: null });
    const joined = await db().event.findFirstOrThrow({
      where: { tenantId: h.rootTenantId, type: 'node.joined', data: { path: ['tokenId'], equals: minted.id } },
    });
    expect(joined.data).toMatchObject({ nodeId, reclaim: true, trust: 'tenant-controlled', role: 'node-tenant' });
  });

  it('keeps platform trust through a platform-operated pool, and never raises a tenant-owned node', async () => {
    const { operated } = await platformPools(h);
    const claims = machineClaims();
    const first = await agentJoin(h, (await mintToken(operated)).token!, claims);
    const reclaimed = await agentJoin(h, (await mintToken(operated, { hosted: 'kubernetes', allowReclaim: true })).token!, claims);
    expect(reclaimed.status).toBe(200);
    expect(reclaimed.answer).toMatchObject({ nodeId: first.answer!.nodeId, role: 'node' });
    expect(await db().node.findUniqueOrThrow({ where: { id: first.answer!.nodeId } })).toMatchObject({
      trust: 'platform',
      identityGeneration: 2,
    });

    const t = await createTestTenant(db());
    const own = await joinedMachine(h, t);
    const again = await agentJoin(h, (await mintToken(t, { hosted: 'kubernetes', allowReclaim: true })).token!, own.claims);
    expect(again.status).toBe(200);
    expect(again.answer).toMatchObject({ nodeId: own.nodeId, role: 'node' });
    expect(await db().node.findUniqueOrThrow({ where: { id: own.nodeId } })).toMatchObject({
      trust: 'tenant-owned',
      identityGeneration: 2,
    });
  });
});

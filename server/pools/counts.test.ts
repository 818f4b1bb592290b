import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { createCaller } from '../api/root';
import { newId } from '../ids';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDatabaseUrl } from '../../test/db';
import { agentJoin, createJoinHarness, machineClaims } from '../../test/join-harness';
import { randomMac } from '../../test/discovery-harness';
import { createDiscoveryToken } from '../tokens/site-scoped';

describe('pools.counts', () => {
  it('counts nodes by state and live tokens per pool, for a viewer too, and nothing of other tenants', async () => {
    const db = testDb();
    const t = await createTestTenant(db);
    const other = await createTestTenant(db);
    const admin = createCaller({ db, principal: t.admin });
    const mint = (poolId = t.poolId) =>
      admin.joinTokens.create({ tenantId: t.tenantId, poolId, ttlSeconds: 600, idempotencyKey: randomUUID() });
    await mint();
    await mint();
    const revoked = await mint();
    await admin.joinTokens.revoke({ tenantId: t.tenantId, poolId: t.poolId, tokenId: revoked.id });
    const node = (state: string, tenantId = t.tenantId, siteId = t.siteId, poolId = t.poolId) =>
      db.node.create({
        data: { id: newId('node'), tenantId, siteId, poolId, role: 'node', state, trust: 'tenant-controlled', attestor: 'join-token' },
      });
    await node('ready');
    await node('ready');
    await node('adopting');
    await node('ready', other.tenantId, other.siteId, other.poolId);
    const second = await t.newPool();

    const { items } = await createCaller({ db, principal: t.viewer }).pools.counts({ tenantId: t.tenantId });
    expect(items).toEqual([
      { poolId: t.poolId, nodesByState: { ready: 2, adopting: 1 }, liveTokens: 2, connectedNodes: 0, pendingRequests: 0 },
    ]);
    expect(items.find((c) => c.poolId === second)).toBeUndefined();
    expect((await failure(createCaller({ db, principal: other.admin }).pools.counts({ tenantId: t.tenantId }))).code).toBe('NOT_FOUND');
  });

  it('counts a pending join request in every live bcd pool of its site, until it is decided', { timeout: 60_000 }, async () => {
    process.env.DATABASE_URL ??= testDatabaseUrl();
    const h = await createJoinHarness();
    const db = testDb();
    const t = await createTestTenant(db);
    const second = await t.newPool();
    const noDaemon = await t.newPool('none');
    const mac = randomMac();
    const token = (await createDiscoveryToken(db, t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 })).token!;
    const pending = await agentJoin(h, token, machineClaims({ macs: [mac] }), {
      role: 'discovery',
      attestor: 'discovery',
      keys: generateNodeKeyAndCsr(),
    });
    const requestId = (pending.answer as unknown as { requestId: string }).requestId;
    const viewer = createCaller({ db, principal: t.viewer });
    const pendingOf = async (poolId: string) =>
      (await viewer.pools.counts({ tenantId: t.tenantId })).items.find((c) => c.poolId === poolId)?.pendingRequests ?? 0;

    expect([await pendingOf(t.poolId), await pendingOf(second), await pendingOf(noDaemon)]).toEqual([1, 1, 0]);
    await createCaller({ db, principal: t.admin }).joinRequests.reject({
      tenantId: t.tenantId,
      poolId: t.poolId,
      requestId,
      reason: 'not ours',
    });
    expect([await pendingOf(t.poolId), await pendingOf(second)]).toEqual([0, 0]);
  });
});

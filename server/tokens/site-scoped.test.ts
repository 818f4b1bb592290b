import { beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../test/join-harness';
import { randomMac } from '../../test/discovery-harness';
import { createCaller } from '../api/root';
import { createDiscoveryToken, createSiteToken } from './site-scoped';

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;
/** The procedures, the API's edge: what a field accepts is decided there, before the domain function. */
const api = (t: TestTenant) => createCaller({ db: db(), principal: t.admin });

describe('discoveryTokens.create', () => {
  it('mints a single-use discovery token bound to the MAC, recording what the boot step saw and who vouched', async () => {
    const t = await createTestTenant(db());
    const mac = randomMac();
    const created = await createDiscoveryToken(db(), t.admin, {
      tenantId: t.tenantId,
      siteId: t.siteId,
      mac: mac.toUpperCase(),
      ip: '10.0.0.9',
      workflowId: 'wf',
      bootLeaseEpoch: 5,
      ttlSeconds: 3600,
    });
    expect(created).toMatchObject({
      role: 'discovery',
      maxUses: 1,
      usesLeft: 1,
      poolId: null,
      siteId: t.siteId,
      token: expect.stringMatching(/^bcjt_/),
    });
    const row = await db().joinToken.findUniqueOrThrow({ where: { id: created.id } });
    expect(row.boundMac).toBe(mac);
    expect(row.discovery).toEqual({ ip: '10.0.0.9', workflowId: 'wf', vouchedBy: t.admin.actor, bootLeaseEpoch: 5 });
    expect(await failure(api(t).discoveryTokens.create({ tenantId: t.tenantId, siteId: t.siteId, mac: 'not-a-mac' }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'mac',
    });
    const other = await createTestTenant(db());
    expect(
      await failure(createDiscoveryToken(db(), other.admin, { tenantId: other.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 })),
    ).toMatchObject({
      code: 'NOT_FOUND',
    });
  });
});

describe('discoveryTokens.create refuses MACs a machine never claims', () => {
  it.each([
    ['broadcast', 'ff:ff:ff:ff:ff:ff'],
    ['multicast (group bit)', '01:00:5e:00:00:fb'],
    ['multicast, dashed', '33-33-00-00-00-01'],
    ['locally administered', '02:42:ac:11:00:02'],
    ['locally administered, upper case', 'DA:00:00:00:00:01'],
    ['all zero', '00:00:00:00:00:00'],
  ])('%s: INVALID_ARGUMENT naming mac, and no token', async (_name, mac) => {
    const t = await createTestTenant(db());
    const answer = await failure(api(t).discoveryTokens.create({ tenantId: t.tenantId, siteId: t.siteId, mac }));
    expect(answer).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'mac' });
    expect(answer.message).toMatch(/^mac: must be a permanent, globally administered/);
    expect(await db().joinToken.count({ where: { siteId: t.siteId } })).toBe(0);
  });
});

describe('siteTokens.create', () => {
  it('mints a site token of at most 16 uses that admits site agents and refuses any other role', async () => {
    const t = await createTestTenant(db());
    expect(await failure(api(t).siteTokens.create({ tenantId: t.tenantId, siteId: t.siteId, maxUses: 17 }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: 'maxUses',
    });
    const created = await createSiteToken(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, maxUses: 16, ttlSeconds: 3600 });
    expect(created).toMatchObject({ role: 'site', maxUses: 16, poolId: null });
    const joined = await agentJoin(h, created.token!, machineClaims(), { role: 'site', expectedRole: 'site' });
    expect(joined.status).toBe(200);
    expect(joined.answer).toMatchObject({ role: 'site', siteId: t.siteId });
    const asNode = await agentJoin(h, created.token!, machineClaims(), { role: 'node' });
    expect(asNode.status).toBe(403);
    const reasons = (await db().event.findMany({ where: { tenantId: t.tenantId, type: 'security.join.refused' } })).map(
      (e) => (e.data as { reason: string }).reason,
    );
    expect(reasons).toEqual(['join-token:role-mismatch']);
    expect(
      await failure(createSiteToken(db(), t.operator, { tenantId: t.tenantId, siteId: t.siteId, maxUses: 1, ttlSeconds: 3600 })),
    ).toMatchObject({
      code: 'ACCESS_DENIED',
    });
  });
});

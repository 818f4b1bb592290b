import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createCaller } from '../api/root';

// What sites.update accepts is its procedure's input schema: updateSite takes the parsed value.
const db = testDb;

describe("a site's queue cap", () => {
  it('is a site setting with bounds: sites.update refuses 0 with a message naming the field', async () => {
    const t = await createTestTenant(db());
    const sites = createCaller({ db: db(), principal: t.admin }).sites;
    await expect(sites.update({ tenantId: t.tenantId, siteId: t.siteId, discovery: { maxPendingRequests: 0 } })).rejects.toThrow(
      /maxPendingRequests/,
    );
    const site = await sites.update({ tenantId: t.tenantId, siteId: t.siteId, discovery: { maxPendingRequests: 3 } });
    expect(site.discovery).toMatchObject({ maxPendingRequests: 3, approval: 'unknown-machines' });
  });
});

describe("a site's cap on its site agents' discovery tokens", () => {
  it('is 64 by default, set by sites.update within bounds, and audited', async () => {
    const t = await createTestTenant(db());
    const sites = createCaller({ db: db(), principal: t.admin }).sites;
    await expect(sites.update({ tenantId: t.tenantId, siteId: t.siteId, siteAgentTokenCap: -1 })).rejects.toThrow(/siteAgentTokenCap/);
    await expect(sites.update({ tenantId: t.tenantId, siteId: t.siteId, siteAgentTokenCap: 100_001 })).rejects.toThrow(/siteAgentTokenCap/);
    expect((await sites.update({ tenantId: t.tenantId, siteId: t.siteId })).siteAgentTokenCap).toBe(64);
    expect((await sites.update({ tenantId: t.tenantId, siteId: t.siteId, siteAgentTokenCap: 5 })).siteAgentTokenCap).toBe(5);
    // Another change keeps it.
    expect((await sites.update({ tenantId: t.tenantId, siteId: t.siteId, requiredApprovals: 2 })).siteAgentTokenCap).toBe(5);
    const audit = await db().auditEntry.findMany({ where: { tenantId: t.tenantId, action: 'site.updated' }, orderBy: { id: 'asc' } });
    expect(audit.map((a) => (a.data as { siteAgentTokenCap: number }).siteAgentTokenCap)).toEqual([64, 5, 5]);
  });
});

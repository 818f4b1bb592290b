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

import { describe, expect, it } from 'vitest';
import { updateSiteInput } from './update';
import { siteFieldOf, toSiteSettingsValues, toUpdateSiteInput } from '@/lib/site-form';

const TENANT = 'tnt_01jz0000000000000000000000';
const SITE = 'site_01jz0000000000000000000000';
const site = {
  discovery: { approval: 'unknown-machines', pendingTtlSeconds: 86_400, maxPendingRequests: 10_000 },
  tpm: { enrollment: true, pendingTtlSeconds: 5400, ekAllowList: [] },
  requiredApprovals: 1,
} as unknown as Parameters<typeof toSiteSettingsValues>[0];

describe('the site settings form', () => {
  it('shows the settings in hours and sends them back unchanged, as sites.update accepts them', () => {
    const values = toSiteSettingsValues(site);
    expect(values).toMatchObject({ discoveryPendingHours: '24', tpmPendingHours: '1.5', maxPendingRequests: '10000' });
    const input = toUpdateSiteInput(TENANT, SITE, values);
    expect(input).toEqual({
      tenantId: TENANT,
      siteId: SITE,
      discovery: { approval: 'unknown-machines', pendingTtlSeconds: 86_400, maxPendingRequests: 10_000 },
      tpm: { enrollment: true, pendingTtlSeconds: 5400 },
      requiredApprovals: 1,
    });
    expect(updateSiteInput.safeParse(input).success).toBe(true);
  });

  it('sends an emptied field so that the server names it, and maps its error back onto the field', () => {
    const input = toUpdateSiteInput(TENANT, SITE, { ...toSiteSettingsValues(site), maxPendingRequests: ' ' });
    const result = updateSiteInput.safeParse(input);
    expect(result.success).toBe(false);
    expect(siteFieldOf(result.error!.issues[0]!.path.join('.'))).toBe('maxPendingRequests');
    expect(siteFieldOf('tpm.pendingTtlSeconds')).toBe('tpmPendingHours');
    expect(siteFieldOf('siteId')).toBeNull();
  });
});

import type { Site, UpdateSiteInput } from './api-types';

/** A site's editable settings as the form holds them (numbers as typed). */
export interface SiteSettingsValues {
  approval: Site['discovery']['approval'];
  discoveryPendingHours: string;
  maxPendingRequests: string;
  tpmEnrollment: boolean;
  tpmPendingHours: string;
  requiredApprovals: 1 | 2;
}

const hours = (seconds: number) => String(Math.round((seconds / 3600) * 100) / 100);
/** Hours as typed, in whole seconds; an empty field is sent as NaN so the server's schema names it. */
const seconds = (text: string) => (text.trim() ? Math.round(Number(text) * 3600) : Number.NaN);
const integer = (text: string) => (text.trim() ? Number(text) : Number.NaN);

export function toSiteSettingsValues(site: Site): SiteSettingsValues {
  return {
    approval: site.discovery.approval,
    discoveryPendingHours: hours(site.discovery.pendingTtlSeconds),
    maxPendingRequests: String(site.discovery.maxPendingRequests),
    tpmEnrollment: site.tpm.enrollment,
    tpmPendingHours: hours(site.tpm.pendingTtlSeconds),
    requiredApprovals: site.requiredApprovals,
  };
}

/** The `sites.update` input for the form: every setting it shows, so what is on screen is what is saved. */
export function toUpdateSiteInput(tenantId: string, siteId: string, values: SiteSettingsValues): UpdateSiteInput {
  return {
    tenantId,
    siteId,
    discovery: {
      approval: values.approval,
      pendingTtlSeconds: seconds(values.discoveryPendingHours),
      maxPendingRequests: integer(values.maxPendingRequests),
    },
    tpm: { enrollment: values.tpmEnrollment, pendingTtlSeconds: seconds(values.tpmPendingHours) },
    requiredApprovals: values.requiredApprovals,
  };
}

export type SiteSettingsField =
  'approval' | 'discoveryPendingHours' | 'maxPendingRequests' | 'tpmEnrollment' | 'tpmPendingHours' | 'requiredApprovals';

/** Which form field a server error is about (`discovery.pendingTtlSeconds` → discoveryPendingHours). */
export function siteFieldOf(serverField: string | null): SiteSettingsField | null {
  switch (serverField) {
    case 'discovery.approval':
      return 'approval';
    case 'discovery.pendingTtlSeconds':
      return 'discoveryPendingHours';
    case 'discovery.maxPendingRequests':
      return 'maxPendingRequests';
    case 'tpm.enrollment':
      return 'tpmEnrollment';
    case 'tpm.pendingTtlSeconds':
      return 'tpmPendingHours';
    case 'requiredApprovals':
      return 'requiredApprovals';
    default:
      return null;
  }
}

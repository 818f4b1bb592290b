import { discoverySettings, type DiscoverySettings } from '../../../../protocol/api/discovery-settings';
import type { AttestorSiteSettings } from '../hooks';

/**
 * A site's `discovery` settings (protocol/api/discovery-settings.ts): `sites.update` merges the keys it sends
 * over the current ones, stores the whole settings and audits them.
 */
export const discoverySiteSettings: AttestorSiteSettings = {
  field: 'discovery',
  read: discoverySettings,
  update(stored, change) {
    const discovery = { ...discoverySettings(stored), ...(change as Partial<DiscoverySettings> | undefined) };
    return { stored: discovery, audit: discovery };
  },
};

import type { Pool, Tenant } from '@/lib/api-types';
import { joinRequestRecord } from '@/lib/join-request-fixture';
import type { JoinRequestRecord } from '@/protocol/api/join-request-schemas';

/** A pending discovery request of site_a, asked `minutesAgo` before 2026-01-01 12:00 UTC. */
export function request(id: string, changes: Partial<JoinRequestRecord> = {}, minutesAgo = 5): JoinRequestRecord {
  const asked = new Date(Date.UTC(2026, 0, 1, 12, -minutesAgo)).toISOString();
  return joinRequestRecord({
    id,
    claims: { hostname: `host-${id}`, productSerial: `SN-${id}` },
    mac: '52:54:00:12:34:56',
    ip: '10.0.0.7',
    vouchedBy: 'pxe-east',
    csrSha256: 'a'.repeat(64),
    siteId: 'site_a',
    createdAt: asked,
    expiresAt: new Date(Date.UTC(2026, 0, 1, 13)).toISOString(),
    ...changes,
  });
}

export const NOW = Date.UTC(2026, 0, 1, 12);

export const pool = { id: 'pool_a', name: 'east-bcd', siteId: 'site_a', agent: 'bcd', archivedAt: null, policy: {} } as unknown as Pool;

export const tenant = { id: 'tenant_root', name: 'root' } as unknown as Tenant;

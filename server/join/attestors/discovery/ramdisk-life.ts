import { discoverySettings } from '../../boot-info';
import type { LeafRow } from '../../../renew/renew-write';

/**
 * A renewal is refused once less than this is left of a ramdisk identity's life: a shorter certificate
 * would expire within the clock skew renewals allow (RENEW_CLOCK_SKEW_SECONDS).
 */
export const MIN_RAMDISK_RENEWAL_SECONDS = 60;

/**
 * A `ramdisk` identity (a PXE ramdisk's, admitted through the discovery attestor) lives at most the site's
 * `pendingTtlSeconds` (default 86,400) from its first issue, however often it renews: a ramdisk is meant to
 * hand over to the installed operating system, which joins for itself. Null for every other role (their
 * identities renew without a cap); otherwise the cap and the seconds left of it at the database's now.
 */
export function ramdiskLife(
  row: Pick<LeafRow, 'role' | 'first_issued_seconds' | 'site_discovery' | 'now_seconds'>,
): { capSeconds: number; leftSeconds: number } | null {
  if (row.role !== 'ramdisk' || row.first_issued_seconds === null) return null;
  const capSeconds = discoverySettings(row.site_discovery).pendingTtlSeconds;
  return { capSeconds, leftSeconds: Math.floor(row.first_issued_seconds + capSeconds - row.now_seconds) };
}

import { discoverySettings } from '../../../../protocol/api/discovery-settings';
import type { RenewalLeaf, RenewalLife } from '../hooks';

/**
 * A renewal is refused once less than this is left of a ramdisk identity's life: a shorter certificate
 * would expire within the clock skew renewals allow (RENEW_CLOCK_SKEW_SECONDS).
 */
const MIN_RAMDISK_RENEWAL_SECONDS = 60;

/**
 * A `ramdisk` identity (a PXE ramdisk's, admitted through the discovery attestor) lives at most the site's
 * `pendingTtlSeconds` (default 86,400) from its first issue, however often it renews: a ramdisk is meant to
 * hand over to the installed operating system, which joins for itself. Null for every other role (their
 * identities renew without a cap); otherwise the seconds left of the cap at the database's now, and the
 * refusal (`ramdisk-lifetime`) once fewer than MIN_RAMDISK_RENEWAL_SECONDS are left.
 */
export function ramdiskLife(leaf: RenewalLeaf): RenewalLife | null {
  if (leaf.role !== 'ramdisk' || leaf.first_issued_seconds === null) return null;
  const capSeconds = discoverySettings(leaf.site_discovery).pendingTtlSeconds;
  const leftSeconds = Math.floor(leaf.first_issued_seconds + capSeconds - leaf.now_seconds);
  const refusal =
    leftSeconds < MIN_RAMDISK_RENEWAL_SECONDS
      ? {
          reason: 'ramdisk-lifetime',
          detail: `the ramdisk identity of node ${leaf.node_id} reached its total life of ${capSeconds} s (the site's pendingTtlSeconds)`,
        }
      : null;
  return { leftSeconds, refusal };
}

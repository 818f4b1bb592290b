import { mismatchedExpectField } from '../../../../protocol/api/join-expect';
import { checkPool, checkToken, hasBoundMac, nodeTrust, refuse, type Admission, type Refusal } from '../../decide';
import { prepareSealedToken } from '../sealed-token';
import { decideProvisioned } from './provisioned';
import { CERT_ROLE_OF_TOKEN } from '../token-roles';
import type { Attestor, AttestorInput } from '../types';
import { TENANT_CONTROLLED_ALLOWED_KINDS } from '../../../commands/allowed-kinds';

/**
 * The `join-token` attestor and JoinService's rules for one join, in joining.md's order: the token (secret
 * in constant time, revocation, expiry, uses, role), then `expect`, the placeholder rule, the reclaim rules,
 * the pool, and the pool's attestor policy. Pure: the caller holds the token row's lock and applies the
 * decision (consuming one use) only when it admits.
 */
function decideJoin(input: AttestorInput): Admission | Refusal {
  const { join: candidate, token, existing, rootTenantId } = input;
  const refused = checkToken('join-token', candidate, token);
  if (refused) return refused;
  const tenant = token!.tenantId;
  // A discovery token admits only through the discovery attestor, which may hold it for an approval.
  if (token!.role === 'discovery') return refuse('join-token:role-mismatch', tenant);
  const mismatched = token!.expect ? mismatchedExpectField(token!.expect, candidate.claims) : null;
  if (mismatched) return refuse('join:expect', tenant, mismatched);
  if (!hasBoundMac(token!, candidate)) return refuse('join:expect', tenant, 'boundMac');
  const provisioned = token!.role === 'provisioned';
  const { hardware } = candidate;
  if (!provisioned && (!hardware.key || !hardware.trusted || !hardware.hasUuidOrSerial) && !token!.expect) {
    return refuse('join:placeholder-hardware', tenant);
  }
  // A provisioned token reclaims the node it names (./provisioned.ts); any other, the node its machine's
  // trusted key names. Only a trusted key can name a known machine: fewer than two identifiers never reclaims.
  const named = provisioned ? decideProvisioned(input) : null;
  if (named && 'admitted' in named) return named;
  const reclaim = named ?? (candidate.trustedKey ? (existing ?? null) : null);
  if (
    !provisioned &&
    reclaim &&
    (!token!.allowReclaim ||
      reclaim.tenantId !== token!.tenantId ||
      reclaim.siteId !== token!.siteId ||
      reclaim.poolId !== token!.poolId ||
      reclaim.role !== token!.role)
  ) {
    return refuse('join:reclaim', tenant);
  }
  const poolRefusal = checkPool('join-token', token!, token!.pool, token!.poolId);
  if (poolRefusal) return poolRefusal;

  const trust = nodeTrust(token!, rootTenantId);
  return {
    admitted: true,
    reclaim,
    ...(provisioned ? { rebind: true as const } : {}),
    tenantId: token!.tenantId,
    siteId: token!.siteId,
    poolId: token!.poolId,
    role: token!.role,
    certRole: trust === 'tenant-controlled' ? 'node-tenant' : (CERT_ROLE_OF_TOKEN[token!.role] ?? token!.role),
    // A tenant-controlled node of a hosted token never receives platform commands.
    allowedKinds: trust === 'tenant-controlled' ? [...TENANT_CONTROLLED_ALLOWED_KINDS] : null,
    hardwareKeyTrusted: candidate.trustedKey !== null,
    trust,
    state: token!.pool?.hasAcceptanceChecks ? 'adopting' : 'adopted',
    actor: `join-token:${token!.id}`,
    labels: token!.labels,
  };
}

/** The `join-token` attestor: everything is on the token row the transaction already locked. */
export const joinTokenAttestor: Attestor<null> = {
  name: 'join-token',
  prepare: (request, context) => prepareSealedToken('join-token', request, context),
  load: async () => null,
  decide: (input) => decideJoin(input),
  write: async () => false,
};

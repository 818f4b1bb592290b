import { refuse, type ExistingNode, type Refusal } from '../../decide';
import type { AttestorInput } from '../types';

/**
 * The rules of a `provisioned` token after the token rules (secret, revocation, expiry, uses, role): the token
 * names one node, and the join reclaims exactly that node, with no `allowReclaim`. Refused (the uniform 403,
 * each with its own recorded reason) when the node no longer exists (`join:provisioned-missing`), is retired
 * (`join:provisioned-retired`), is in another tenant or site than the token, or is a site agent
 * (`join:provisioned-elsewhere`), or when the machine's trusted hardware key belongs to a different node
 * (`join:provisioned-other-machine`: two nodes would then name one machine, so the safer answer is no; the
 * operator retires the other node first). `expect`, when the token carries one, and the pool rules (checked by
 * the caller) still apply.
 * The placeholder rule does not: the token, not the machine's identifiers, names the node.
 *
 * Answers the node to reclaim, or the refusal.
 */
export function decideProvisioned({ join: candidate, token, existing, bound }: AttestorInput): ExistingNode | Refusal {
  const t = token!;
  const tenant = t.tenantId;
  if (!t.nodeId || !bound) return refuse('join:provisioned-missing', tenant);
  if (bound.state === 'retired') return refuse('join:provisioned-retired', tenant);
  if (bound.tenantId !== t.tenantId || bound.siteId !== t.siteId || bound.role === 'site') {
    return refuse('join:provisioned-elsewhere', tenant);
  }
  // Only a trusted key names a machine; one that names another node is a conflict the deploy cannot settle.
  if (candidate.trustedKey && existing && existing.id !== bound.id) return refuse('join:provisioned-other-machine', tenant);
  return bound;
}

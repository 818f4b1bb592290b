import type { TpmRefusalReason } from './reasons';
import type { TpmSiteSettings } from './settings';
import type { VerifiedTpmAttestation } from './verify';

/** The site a `tpm` join names (its bcd config's `site`), as the admission transaction read it. */
export interface TpmSiteRow {
  readonly id: string;
  readonly ownerTenantId: string;
  readonly isArchived: boolean;
  readonly tpm: TpmSiteSettings;
}

/** The pool a `tpm` join names, or the pool an approval assigned. */
export interface TpmPoolRow {
  readonly id: string;
  readonly siteId: string;
  readonly ownerTenantId: string;
  readonly agent: string;
  readonly isArchived: boolean;
  /** `policy.joinAttestors`; null admits every attestor. */
  readonly joinAttestors: readonly string[] | null;
  /** `policy.tpm.ekAllowList`. */
  readonly ekAllowList: readonly string[];
}

/** The node this EK already belongs to (an unchanged EK reclaims it). */
export interface TpmBoundNode {
  readonly id: string;
  readonly tenantId: string;
  readonly siteId: string;
  readonly poolId: string | null;
  readonly state: string;
  readonly identityGeneration: number;
  /** The node's labels: a reclaim keeps them (the admission's event names them). */
  readonly labels?: Record<string, string>;
}

/** The EK's live join request (machine key `tpm-ek:<hash>`), if any. */
export interface TpmJoinRequestRow {
  readonly id: string;
  readonly state: 'pending' | 'approved' | 'rejected' | 'expired' | 'consumed';
  readonly csrSha256: string;
  readonly poolId: string | null;
  readonly isExpired: boolean;
  /** What the approvals gave; the node gets them when the join consumes the approval. */
  readonly labels?: Record<string, string>;
}

/** Everything an activated `tpm` join is decided on (after round two's activation verified). */
export interface TpmDecisionInput {
  readonly facts: VerifiedTpmAttestation;
  readonly csrSha256: string;
  readonly role: string;
  readonly site: TpmSiteRow | null;
  /** The pool the join named; null when it named none. */
  readonly pool: TpmPoolRow | null;
  readonly poolNamed: boolean;
  readonly boundNode: TpmBoundNode | null;
  readonly request: TpmJoinRequestRow | null;
  /** The pool an approval assigned (`request.poolId`), read when the request is approved. */
  readonly approvedPool: TpmPoolRow | null;
}

/** Why the machine is trusted without (or with) a person: what the event and the audit row say. */
type TpmAdmittedBy = 'vendor-root' | 'site-allow-list' | 'pool-allow-list' | 'approval' | 'reclaim';

type TpmDecision =
  | {
      readonly kind: 'admit';
      readonly by: TpmAdmittedBy;
      readonly tenantId: string;
      readonly siteId: string;
      readonly poolId: string;
      /** The node an unchanged EK reclaims (identity generation + 1), else null: a new machine. */
      readonly reclaim: TpmBoundNode | null;
      /** The approved request the join consumes in its transaction. */
      readonly consumesRequestId: string | null;
      /** Written into the leaf after the SPIFFE ID; renewals then need the AK's key attestation. */
      readonly statement: string;
      readonly nodeKey: 'tpm';
    }
  | { readonly kind: 'defer'; readonly tenantId: string; readonly siteId: string; readonly request: TpmEnrollment }
  | { readonly kind: 'refuse'; readonly reason: TpmRefusalReason; readonly tenantId: string | null };

/** The join request an enrollment records or refreshes: what the queue shows an operator. */
interface TpmEnrollment {
  readonly attestor: 'tpm';
  /** `tpm-ek:<ekHash>`: one pending request per EK. */
  readonly machineKey: string;
  readonly csrSha256: string;
  readonly pendingTtlSeconds: number;
  /** The pool the join named, which the operator may change at approval. */
  readonly poolId: string | null;
  /** The EK certificate chains to a configured vendor root (the request's `ekCertified`). */
  readonly ekCertified: boolean;
  readonly tpm: {
    readonly ekHash: string;
    /** The EK certificate's issuer, or "no EK certificate". */
    readonly ekIssuer: string;
    /** Why a present EK certificate did not chain to a vendor root; null otherwise. */
    readonly ekChainProblem: string | null;
    readonly akStatement: string;
  };
}

export const TPM_MACHINE_KEY_PREFIX = 'tpm-ek:';

const refuse = (reason: TpmRefusalReason, tenantId: string | null = null): TpmDecision => ({ kind: 'refuse', reason, tenantId });

/** A pool a `tpm` join may land in: live, running bcd, in the site, owned by the site's tenant, taking tpm joins. */
function poolProblem(pool: TpmPoolRow, site: TpmSiteRow): boolean {
  return (
    pool.isArchived ||
    pool.agent !== 'bcd' ||
    pool.siteId !== site.id ||
    pool.ownerTenantId !== site.ownerTenantId ||
    (pool.joinAttestors !== null && !pool.joinAttestors.includes('tpm'))
  );
}

/**
 * Decides an activated `tpm` join (docs/tpm-attestation.md "Round two"), pure over the rows the admission
 * transaction locked. In order: the role is `node`; the named site is live; a named pool is one the join may
 * land in; an EK already bound to a node reclaims it in its pool (the activation proved the same TPM);
 * otherwise an EK whose certificate chains to a vendor root, or whose hash the site or the named pool lists,
 * is admitted into the named pool (with none named it waits for an operator to pick one); an approved request
 * for this CSR admits into the approved pool; anything else is enrolled as a join request keyed by the EK hash
 * (refused when the site's enrollment is off, or when the EK's request was rejected).
 */
export function decideTpmJoin(input: TpmDecisionInput): TpmDecision {
  const { facts, site, pool, request } = input;
  if (input.role !== 'node') return refuse('tpm:role');
  if (!site || site.isArchived) return refuse('tpm:site');
  const tenantId = site.ownerTenantId;
  if (input.poolNamed && (!pool || poolProblem(pool, site))) return refuse('tpm:pool', tenantId);
  const admit = (
    by: TpmAdmittedBy,
    poolId: string,
    reclaim: TpmBoundNode | null,
    consumesRequestId: string | null = null,
  ): TpmDecision => ({
    kind: 'admit',
    by,
    tenantId,
    siteId: site.id,
    poolId,
    reclaim,
    consumesRequestId,
    statement: facts.akStatement,
    nodeKey: 'tpm',
  });

  const bound = input.boundNode;
  if (bound) {
    if (bound.state === 'retired' || bound.siteId !== site.id || bound.tenantId !== tenantId || !bound.poolId)
      return refuse('tpm:reclaim', tenantId);
    return admit('reclaim', bound.poolId, bound);
  }

  const vendorRooted = facts.ekCertificate?.chainsToRoot === true;
  const listedBySite = site.tpm.ekAllowList.includes(facts.ekHash);
  const listedByPool = pool?.ekAllowList.includes(facts.ekHash) ?? false;
  if (pool && (vendorRooted || listedBySite || listedByPool)) {
    return admit(vendorRooted ? 'vendor-root' : listedByPool ? 'pool-allow-list' : 'site-allow-list', pool.id, null);
  }

  if (request && !request.isExpired) {
    if (request.state === 'rejected') return refuse('tpm:request', tenantId);
    if (request.state === 'approved') {
      if (request.csrSha256 !== input.csrSha256) return refuse('tpm:request', tenantId);
      const approved = input.approvedPool;
      if (!approved || poolProblem(approved, site)) return refuse('tpm:pool', tenantId);
      return admit('approval', approved.id, null, request.id);
    }
  }
  if (!site.tpm.enrollment && !(vendorRooted || listedBySite)) return refuse('tpm:enrollment', tenantId);
  return {
    kind: 'defer',
    tenantId,
    siteId: site.id,
    request: {
      attestor: 'tpm',
      machineKey: `${TPM_MACHINE_KEY_PREFIX}${facts.ekHash}`,
      csrSha256: input.csrSha256,
      pendingTtlSeconds: site.tpm.pendingTtlSeconds,
      poolId: pool?.id ?? null,
      ekCertified: vendorRooted,
      tpm: {
        ekHash: facts.ekHash,
        ekIssuer: facts.ekCertificate?.issuer ?? 'no EK certificate',
        ekChainProblem:
          facts.ekCertificate && !facts.ekCertificate.chainsToRoot
            ? (facts.ekCertificate.chainProblem ?? 'does not chain to a configured vendor root')
            : null,
        akStatement: facts.akStatement,
      },
    },
  };
}

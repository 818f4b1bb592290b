import type { JoinRequestRecord } from '../../../protocol/api/join-request-schemas';

// What an attestor registers beside its join path (types.ts): its per-site settings, the fields of its join
// requests the queue shows, and what a renewal of an identity it admitted must pass. Sites, the queue and renew
// reach them through the registry (./registry.ts), never through the attestor's folder.

/**
 * An attestor's settings of one site: stored in the `sites` column named `field`, shown as the site record's
 * field of that name (protocol/api/site-schemas.ts) and changed through `sites.update`'s field of that name.
 */
export interface AttestorSiteSettings {
  readonly field: string;
  /** The stored value with defaults filled in; an unreadable value reads as the defaults. */
  read(stored: unknown): unknown;
  /**
   * What `sites.update` stores for `change` (its input's field, undefined when the caller left it out), and what
   * the site's `site.updated` audit row says of it. Throws a DomainError for a change it refuses: the site is
   * then left as it was.
   */
  update(stored: unknown, change: unknown): { stored: unknown; audit: unknown };
}

/** The fields of a join request record that belong to one attestor (null on every other attestor's requests). */
export type AttestorRequestFields = Pick<JoinRequestRecord, 'tpm' | 'ekCertified'>;

/**
 * The presented leaf's row as renewal reads it (server/renew/renew-sql.ts): what a renewal check may read.
 * `first_issued_seconds` and `site_discovery` are read for `ramdisk` leaves only, null otherwise.
 */
export interface RenewalLeaf {
  node_id: string;
  role: string;
  now_seconds: number;
  first_issued_seconds: number | null;
  site_discovery: unknown;
}

/** A renewal as far as the checks go: the new CSR, the leaf's `urn:bc:` statements and the body's `keyAttestation`. */
export interface RenewalRequest {
  statements: readonly string[];
  keyAttestation: Record<string, unknown> | null;
  csr: { csrSha256: string; spkiDer: Buffer };
}

export type RenewalVerdict = { ok: true } | { ok: false; reason: string; detail: string };

/** How long an identity may still live, from its first issue: a renewal past `refusal` is refused. */
export interface RenewalLife {
  /** The seconds left; the renewed certificate ends no later. */
  leftSeconds: number;
  /** Why the renewal is refused (its life is over), or null. */
  refusal: { reason: string; detail: string } | null;
}

/**
 * What a renewal of an identity the attestor admitted must pass, checked in renew's order (RenewService): `life`
 * after the proof of possession, `check` once the CSR parsed. Both are pure.
 */
export interface AttestorRenewal {
  /** The identity's remaining life when the attestor caps it (a ramdisk's), else null. */
  life?(leaf: RenewalLeaf): RenewalLife | null;
  /** The attestor's check when the leaf carries a statement it wrote at the join (a TPM AK's), else null. */
  check?(renewal: RenewalRequest): RenewalVerdict | null;
}

import type { KeyObject } from 'node:crypto';
import type pg from 'pg';
import type { Admission, BoundNode, ExistingNode, LockedToken, Refusal } from '../decide';
import type { PreparedJoin } from '../prepare';
import type { RequestAdmission } from '../request-admission';
import type { JoinRequestRow } from '../../requests/records';
import type { AttestorRenewal, AttestorRequestFields, AttestorSiteSettings } from './hooks';

// The attestor seam. JoinService's core (prepare.ts, admit.ts, join-service.ts, admission-pipeline.ts), sites,
// the queue and renew know attestors only through this interface and the registry (./index.ts, ./registry.ts);
// everything an attestor needs of the request, of the database and of the answer it gives goes through the
// hooks below, in the order a join runs, and the hooks of ./hooks.ts.

/** What an attestor decided for one join, against the rows the admission transaction locked. */
export type AttestorVerdict = Admission | Refusal | Deferral | Challenge;

/**
 * The machine must wait for an operator: a join request was recorded or refreshed (written by the
 * admission transaction with `write`), and the agent gets the signed `pending` answer. Nothing is issued
 * and no token is spent.
 */
interface Deferral {
  admitted: false;
  deferred: true;
  requestId: string;
  tenantId: string;
  /** How long the agent waits before it retries. */
  retryAfterSeconds: number;
}

/**
 * Round one of a challenge round: nothing is issued; the core stores a fresh single-use nonce bound to the
 * join's CSR hash, this attestor and `subject` (join_challenges, shared by every instance), and answers the
 * signed `challenge` body. The agent answers in round two by sending the same request with the nonce (and
 * what the attestor asks of it) in its `attestation`; the attestor then finds the stored row through
 * `loadChallenges` and consumes it in `write` (see ../challenges.ts).
 */
interface Challenge {
  admitted: false;
  challenge: true;
  /** What the nonce is bound to besides the CSR and the attestor (a node id, an EK hash). */
  subject: string;
  /** Attestor-specific fields of the answer (`challenge` in the body), e.g. a credential blob; JSON only. */
  data?: Record<string, unknown>;
  /**
   * SHA-256 of the answer round two must carry when it is not the nonce itself (a TPM's activated secret);
   * stored with the nonce and compared by the attestor.
   */
  answerSha256?: Buffer;
  /** The nonce's lifetime; default CHALLENGE_TTL_SECONDS, at most MAX_CHALLENGE_TTL_SECONDS. */
  ttlSeconds?: number;
  /** Where the event of a refused round two goes once the caller proved something; null: the root tenant. */
  tenantId: string | null;
}

export const isDeferral = (v: AttestorVerdict): v is Deferral => 'deferred' in v;
export const isChallenge = (v: AttestorVerdict): v is Challenge => 'challenge' in v;

/** What every attestor is given for one join of a batch. */
export interface AttestorInput {
  join: PreparedJoin;
  /** The join's token row (locked), when the join carries a token (`PreparedJoin.token`) and it exists. */
  token: LockedToken | undefined;
  /** The node the join's trusted hardware key belongs to (locked), unless the join raced it. */
  existing: ExistingNode | undefined;
  /** The node the join's `provisioned` token names (locked), when the token names one and it exists. */
  bound?: BoundNode | undefined;
  rootTenantId: string | null;
  /** The database's time for this batch (compute_now()). */
  now: Date;
  /**
   * The shared admission rule for a NEW join request (the site's cap, the new-request rate limits): a deferring
   * attestor asks it before it records one, and refuses with the reason it answers. Refreshing the machine's
   * live request is not a new request.
   */
  requests: RequestAdmission;
}

/** A join's request as the core parsed it: the fields every attestor shares. */
export interface JoinRequestFields {
  /** The whole body, so an attestor reads its own fields (`sealedToken`, `attestation`, …). */
  body: Readonly<Record<string, unknown>>;
  csrDer: Buffer;
  /** Lowercase hex SHA-256 of `csrDer`. */
  csrSha256: string;
  role: string;
}

/** A bearer token carried by the join (sealed-token attestors), as preparation proved it. */
export interface PreparedToken {
  id: string;
  /** The seal's `iat` (Unix seconds); the admission refuses it (`join:token`) when far from the database's clock. */
  sealedAt: number;
  /** SHA-256 of the bearer token's secret; the secret itself is not kept past preparation. */
  secretHash: Buffer;
}

/** What an attestor's `prepare` hands the admission. */
export interface AttestorPrepared {
  /** The token the transaction locks and passes back as `AttestorInput.token`; null when none. */
  token: PreparedToken | null;
  /**
   * What the attestor proved and needs at decision time. It crosses from a preparation thread by structured
   * clone: plain JSON values only (strings, numbers, booleans, arrays, objects; bytes as hex or base64).
   */
  evidence?: unknown;
}

/**
 * One attestor (joining.md "The join flow", step 4, and the attestors of attestation.md), registered once in
 * ./index.ts. The core runs, for each join naming it:
 *
 * 1. `prepare(request, context)` off the event loop (a preparation thread): parse the attestor's own fields
 *    of the body and do its cryptography. Throws a JoinRefusal (`join:malformed`, `<name>:<reason>`) to
 *    refuse. The core then verifies the CSR's self-signature, derives the hardware key and hands the
 *    admission a PreparedJoin.
 * 2. `queueSite(join, tokens)` for a deferring attestor: the site a new join request would wait in; the core
 *    locks those sites' queues and loads the shared admission rule (../request-admission.ts).
 *    `load(client, joins, tokens)` inside the batch's admission transaction, only when the batch holds a join
 *    naming this attestor (so other attestors pay no round trip): read and lock its own rows (and its
 *    challenges: ../challenges.ts).
 * 3. `decide(input, state)` per join, in arrival order, pure over the locked rows and the state: admit, defer
 *    (a join request; a new one only once `input.requests.admitNew` agreed), challenge (round one of a challenge round), or refuse with a reason. An admission
 *    into a pool must respect the pool's `policy.joinAttestors` (checkPool in ../decide.ts).
 * 4. `write(client, state, admitted)` after every join of the batch was decided: deferrals, consumed
 *    approvals or challenges; returns whether it wrote (the transaction then commits even if nothing was
 *    admitted).
 *
 * Outside the join, the registry asks its optional `siteSettings`, `requestFields` and `renewal` hooks.
 */
export interface Attestor<State = unknown> {
  readonly name: string;
  prepare(request: JoinRequestFields, context: PrepareContext): AttestorPrepared;
  /**
   * Keys the admission pipeline must not hold in two transactions at once for this join, besides the CSR's
   * key and the trusted machine (AdmissionPipeline): e.g. `node:<id>` for a join that names an existing node.
   */
  holdKeys?(join: PreparedJoin): string[];
  /**
   * The site whose queue this join may record a new join request in, or null when it cannot defer: the core
   * then locks that site's queue and loads its new-request windows before `load` (../request-admission.ts),
   * so `decide` can ask `input.requests`. Deferring attestors declare it; the others leave it out.
   */
  queueSite?(join: PreparedJoin, tokens: ReadonlyMap<string, LockedToken>): string | null;
  load(client: pg.PoolClient, joins: PreparedJoin[], tokens: ReadonlyMap<string, LockedToken>): Promise<State>;
  decide(input: AttestorInput, state: State): AttestorVerdict;
  write(client: pg.PoolClient, state: State, admitted: ReadonlyMap<PreparedJoin, string>): Promise<boolean>;

  // Beside the join (./hooks.ts): what sites, the queue and renew ask the registry for.

  /** Its settings of each site (a `sites` column), when it has any: read and changed through server/sites. */
  readonly siteSettings?: AttestorSiteSettings;
  /** The fields of its join requests the queue shows beside the shared ones (server/requests/records.ts). */
  requestFields?(row: JoinRequestRow): Partial<AttestorRequestFields>;
  /** What a renewal of an identity it admitted must pass (server/renew/renew-service.ts). */
  readonly renewal?: AttestorRenewal;
}

/** What preparation may use: JoinService's encryption key (to open seals), and every non-retired one (rotations). */
export interface PrepareContext {
  encryptionKey: KeyObject;
  encryptionKeys?: readonly KeyObject[];
}

import type pg from 'pg';
import { newId } from '../ids';
import type { JoinCrypto } from '../pki/issuance/join-crypto';
import { joinAnswerTrust, type JoinAnswerTrust } from '../pki/rotation/trust-state';
import { certificateTtlFor, issueNodeCertificate, type NodeCertificateRole } from '../pki/issuance/node-certificate';
import { secretHashMatches } from './crypto/constant-time';
import { isFreshSeal } from './crypto/open-seal';
import type { BoundNode, ExistingNode, LockedToken } from './decide';
import { attestorNamed } from './attestors';
import { isChallenge, isDeferral, type Attestor } from './attestors/types';
import { CHALLENGE_TTL_SECONDS, MAX_CHALLENGE_TTL_SECONDS, insertChallenges, newNonce, type IssuedChallenge } from './challenges';
import type { PreparedJoin } from './prepare';
import {
  BEGIN_ADMISSION_SQL,
  READ_ADMISSION_SQL,
  WRITE_ADMISSIONS_SQL,
  admissionParams,
  type AdmissionReadRow,
  type AdmissionRow,
  type LockedTokenJson,
} from './admit-sql';
import type { CertificateHints } from './presign';
import {
  DEFAULT_NEW_REQUEST_LIMITS,
  admitChallenges,
  loadRequestAdmission,
  writeRequestAdmission,
  type NewRequestLimits,
} from './request-admission';

export type AdmitOutcome =
  | { kind: 'joined'; body: JoinedBody }
  /** Deferred: a join request was recorded or refreshed; the agent retries after `retryAfterSeconds`. */
  | { kind: 'pending'; body: PendingBody }
  /** Round one of a challenge round: a nonce was stored; the agent answers it in round two. */
  | { kind: 'challenge'; body: ChallengeBody }
  | { kind: 'refused'; reason: string; tenantId: string | null; expectField?: string }
  | { kind: 'conflict' }
  /** A database failure: nothing was written, the agent may retry. */
  | { kind: 'error' };

interface JoinedBody {
  status: 'joined';
  nodeId: string;
  certificateChain: string[];
  commandTrustBundle: string[];
  csrSha256: string;
  trustDomain: string;
  siteId: string;
  role: string;
  /** The trust set the agent stores (protocol.md "Answers"). */
  trust: JoinAnswerTrust;
}

interface PendingBody {
  status: 'pending';
  requestId: string;
  retryAfterSeconds: number;
  csrSha256: string;
}

/** The signed answer of a challenge round's first round (protocol.md "Challenge rounds"). */
interface ChallengeBody {
  status: 'challenge';
  attestor: string;
  /** 32 random bytes, b64url: single use, bound to this attestor, this CSR and the join's subject. */
  nonce: string;
  /** When the nonce stops being good (Unix seconds, the database's clock). */
  expiresAt: number;
  csrSha256: string;
  /** Attestor-specific fields (Challenge.data), when it has any. */
  challenge?: Record<string, unknown>;
}

export interface AdmitDeps {
  crypto: JoinCrypto;
  certTtlSeconds: number;
  rootTenantId: string | null;
  hints: CertificateHints;
  /**
   * Trusted keys (hex) that another transaction inserted while an earlier attempt of these joins was in
   * flight: a node found for one of them now is the other join of a race, answered CONFLICT, not a reclaim.
   */
  racedKeys?: ReadonlySet<string>;
  /**
   * Joins whose machine an earlier batch of this process admitted while they waited (RaceWindow). Like
   * `racedKeys`, they answer CONFLICT, but only once their own token checks pass: a refusal stays the
   * uniform refusal, so a caller without a good token learns nothing about the machine.
   */
  racedJoins?: ReadonlySet<PreparedJoin>;
  /** The new-join-request rate limits (DEFAULT_NEW_REQUEST_LIMITS when absent). */
  requestLimits?: NewRequestLimits;
  /** Called once the batch holds its locks and has decided: the next batch may start meanwhile. */
  onDecided?: () => void;
}

/** A batch whose write failed; `freshKeys` are the trusted keys it was inserting as new nodes. */
export class AdmitWriteError extends Error {
  constructor(
    readonly cause: unknown,
    readonly freshKeys: Set<string>,
  ) {
    super('The admission write failed', { cause });
  }
}

/** COMMIT itself failed: whether the batch was written is unknown, so it must not be retried. */
export class CommitError extends Error {}

function toLockedToken(r: LockedTokenJson): LockedToken {
  const policy = r.policy ?? {};
  return {
    id: r.id,
    tenantId: r.tenant_id,
    poolId: r.pool_id,
    siteId: r.site_id,
    role: r.role,
    secretHash: Buffer.from(r.secret_hash, 'hex'),
    usesLeft: r.uses_left,
    expect: r.expect,
    allowReclaim: r.allow_reclaim,
    hosted: r.hosted,
    boundMac: r.bound_mac,
    discovery: r.discovery ?? null,
    nodeId: r.node_id ?? null,
    labels: r.labels ?? {},
    isRevoked: r.is_revoked,
    isExpired: r.is_expired,
    pool: r.p_id
      ? {
          agent: r.agent,
          ownerTenantId: r.p_owner,
          siteId: r.p_site,
          isArchived: r.p_archived,
          joinAttestors: policy.joinAttestors ?? null,
          platformOperated: policy.kubernetes?.platformOperated === true,
          hasAcceptanceChecks: r.p_checks,
        }
      : null,
    site: { kind: r.s_kind, ownerTenantId: r.s_owner, discovery: r.s_discovery },
  };
}

/**
 * Admits a batch of prepared joins in ONE transaction: lock their tokens (in id order, so concurrent
 * batches cannot deadlock) and the nodes their trusted hardware keys name, decide each join in arrival
 * order against the locked rows (one use consumed per admission, so `maxUses` is exact), then write every
 * node, certificate, authorization row, event and audit row in a single statement and commit. Batching
 * turns the shared token's lock-and-commit into one per batch instead of one per join.
 *
 * Certificates are signed before the transaction where the token's last admission predicts the decision
 * (see CertificateHints), and inside it otherwise.
 *
 * Throws on a database error (the transaction is rolled back); the caller retries joins one by one.
 */
export async function admitBatch(client: pg.PoolClient, joins: PreparedJoin[], deps: AdmitDeps): Promise<AdmitOutcome[]> {
  const presigned = joins.map((join) => deps.hints.presign(join, deps.crypto, deps.certTtlSeconds));
  // Built once per batch from the trust state of the keys the batch issues with.
  const answerTrust = joinAnswerTrust(deps.crypto.trust);
  const trustedKeys = joins.filter((j) => j.trustedKey).map((j) => j.trustedKey!);
  // BEGIN and the locking read go out together: one wait instead of two.
  const begin = client.query(BEGIN_ADMISSION_SQL);
  const read = client.query<AdmissionReadRow>({
    name: 'bc-join-read',
    text: READ_ADMISSION_SQL,
    values: [[...new Set(joins.flatMap((j) => (j.token ? [j.token.id] : [])))], trustedKeys, joins.map((j) => j.spkiSha256)],
  });
  try {
    // Both settle before anything is decided: a read that ran without its BEGIN held no lock.
    const [, result] = await Promise.all([begin, read]);
    const row = result.rows[0]!; // a SELECT without FROM answers exactly one row
    const notBefore = row.now;
    deps.hints.observeDatabaseNow(notBefore);
    const tokens = new Map(row.tokens.map((r) => [r.id, toLockedToken(r)]));
    const existing = new Map<string, ExistingNode>();
    const bound = new Map<string, BoundNode>();
    for (const r of row.nodes) {
      const node = {
        id: r.id,
        tenantId: r.tenant_id,
        siteId: r.site_id,
        poolId: r.pool_id,
        role: r.role,
        identityGeneration: r.identity_generation,
        labels: r.labels ?? {},
      };
      if (r.by_key) existing.set(r.hardware_key!, node);
      bound.set(r.id, { ...node, state: r.state });
    }
    const certified = new Set(row.certified);

    // The queues the batch's joins may wait in, locked before any attestor reads its requests.
    const requests = await loadRequestAdmission(
      client,
      joins.flatMap((join) => {
        const siteId = attestorNamed(join.attestor)!.queueSite?.(join, tokens) ?? null;
        return siteId ? [{ join, siteId }] : [];
      }),
      deps.requestLimits ?? DEFAULT_NEW_REQUEST_LIMITS,
    );
    // Attestors with rows of their own read them only when the batch holds a join naming them.
    const states = new Map<Attestor<unknown>, unknown>();
    for (const name of new Set(joins.map((j) => j.attestor))) {
      const attestor = attestorNamed(name)!;
      states.set(
        attestor,
        await attestor.load(
          client,
          joins.filter((j) => j.attestor === name),
          tokens,
        ),
      );
    }

    const outcomes: AdmitOutcome[] = [];
    const rows: AdmissionRow[] = [];
    const claimedKeys = new Set<string>();
    const claimedNodes = new Set<string>();
    const challenges: { index: number; issued: IssuedChallenge; data?: Record<string, unknown> }[] = [];
    for (const [index, join] of joins.entries()) {
      // A request seen before (the same sealed token and CSR, replayed), or sealed too long before or after
      // the database's now, is refused like a bad seal.
      const spkiHex = join.spkiSha256.toString('hex');
      if (certified.has(spkiHex) || (join.token && !isFreshSeal(join.token.sealedAt, notBefore))) {
        outcomes.push({ kind: 'refused', reason: 'join:token', tenantId: null });
        continue;
      }
      const token = join.token ? tokens.get(join.token.id) : undefined;
      // An unknown id still costs the secret comparison a known one does (decideJoin compares only then).
      if (join.token && !token) secretHashMatches(undefined, join.token.secretHash);
      const keyHex = join.trustedKey?.toString('hex');
      const known = keyHex ? existing.get(keyHex) : undefined;
      // The other join of a race: decided as the machine's first join, so every check of its own token,
      // claims and pool still applies; if it would be admitted, it answers CONFLICT instead.
      const raced = Boolean(known && keyHex && (deps.racedKeys?.has(keyHex) || deps.racedJoins?.has(join)));
      const attestor = attestorNamed(join.attestor)!;
      const decision = attestor.decide(
        {
          join,
          token,
          existing: raced ? undefined : known,
          bound: token?.nodeId ? bound.get(token.nodeId) : undefined,
          rootTenantId: deps.rootTenantId,
          now: notBefore,
          requests,
        },
        states.get(attestor),
      );
      if (isDeferral(decision)) {
        const body: PendingBody = {
          status: 'pending',
          requestId: decision.requestId,
          retryAfterSeconds: decision.retryAfterSeconds,
          csrSha256: join.csr.csrSha256,
        };
        outcomes.push({ kind: 'pending', body });
        continue;
      }
      if (isChallenge(decision)) {
        const ttlSeconds = Math.min(Math.max(Math.floor(decision.ttlSeconds ?? CHALLENGE_TTL_SECONDS), 1), MAX_CHALLENGE_TTL_SECONDS);
        const issued = {
          nonce: newNonce(),
          attestor: attestor.name,
          csrSha256: join.csr.csrSha256,
          subject: decision.subject,
          answerSha256: decision.answerSha256 ?? null,
          ttlSeconds,
        };
        challenges.push({ index, issued, ...(decision.data ? { data: decision.data } : {}) });
        // Filled in once the nonce is stored (its expiry is the database's).
        outcomes.push({
          kind: 'challenge',
          body: { status: 'challenge', attestor: attestor.name, nonce: issued.nonce, expiresAt: 0, csrSha256: join.csr.csrSha256 },
        });
        continue;
      }
      if (!decision.admitted) {
        outcomes.push({
          kind: 'refused',
          reason: decision.reason,
          tenantId: decision.tenantId,
          ...(decision.expectField ? { expectField: decision.expectField } : {}),
        });
        continue;
      }
      if (raced) {
        outcomes.push({ kind: 'conflict' });
        continue;
      }
      // Two joins of one trusted machine in one batch: the first wins, the second raced it.
      if (keyHex) {
        if (claimedKeys.has(keyHex)) {
          outcomes.push({ kind: 'conflict' });
          continue;
        }
        claimedKeys.add(keyHex);
      }
      // Two reclaims of one node in one batch (two provisioned tokens naming it, by two machines) would both
      // build on the generation read here: the first wins, the second raced it.
      if (decision.reclaim) {
        if (claimedNodes.has(decision.reclaim.id)) {
          outcomes.push({ kind: 'conflict' });
          continue;
        }
        claimedNodes.add(decision.reclaim.id);
      }
      certified.add(spkiHex);
      if (join.token && token) {
        token.usesLeft -= 1;
        deps.hints.remember(join.token.id, decision.siteId, decision.certRole, join.token.secretHash);
      }
      const early = presigned[index];
      const usable =
        early &&
        !decision.reclaim &&
        !decision.statements?.length &&
        early.siteId === decision.siteId &&
        early.certRole === decision.certRole
          ? early
          : null;
      const nodeId = usable?.nodeId ?? decision.reclaim?.id ?? newId('node');
      const identityGeneration = decision.reclaim ? decision.reclaim.identityGeneration + 1 : 1;
      const cert =
        usable?.cert ??
        issueNodeCertificate(deps.crypto.nodeCa, {
          publicKeySpkiDer: join.csr.spkiDer,
          trustDomain: deps.crypto.trustDomain,
          siteId: decision.siteId,
          nodeId,
          role: decision.certRole as NodeCertificateRole,
          notBefore,
          ttlSeconds: certificateTtlFor(decision.certRole, deps.certTtlSeconds),
          ...(decision.statements?.length ? { extraUris: decision.statements } : {}),
        });
      rows.push({ join, decision, nodeId, identityGeneration, cert, caPin: deps.crypto.nodeCaPin, tokenId: join.token?.id ?? null });
      outcomes.push({
        kind: 'joined',
        body: {
          status: 'joined',
          nodeId,
          certificateChain: [cert.der.toString('base64'), deps.crypto.nodeCaCertificate],
          commandTrustBundle: deps.crypto.commandTrustBundle,
          csrSha256: join.csr.csrSha256,
          trustDomain: deps.crypto.trustDomain,
          siteId: decision.siteId,
          role: decision.certRole,
          trust: answerTrust,
        },
      });
    }
    // A challenge issued without a token (any attestor's round one) must have room in its source address's window.
    const tokenless = challenges.filter((c) => !joins[c.index]!.token);
    const room = await admitChallenges(
      client,
      tokenless.map((c) => joins[c.index]!.clientAddress),
      deps.requestLimits ?? DEFAULT_NEW_REQUEST_LIMITS,
    );
    const limited = new Set(tokenless.filter((_, i) => !room[i]));
    for (const c of limited) outcomes[c.index] = { kind: 'refused', reason: `${c.issued.attestor}:rate-limited`, tenantId: null };
    if (limited.size) challenges.splice(0, challenges.length, ...challenges.filter((c) => !limited.has(c)));
    deps.onDecided?.();
    let wrote = false;
    try {
      const admitted = new Map(rows.map((r) => [r.join, r.nodeId]));
      for (const [attestor, state] of states) wrote = (await attestor.write(client, state, admitted)) || wrote;
      wrote = (await writeRequestAdmission(client, requests)) || wrote;
      if (challenges.length) {
        const expiries = await insertChallenges(
          client,
          challenges.map((c) => c.issued),
        );
        challenges.forEach((c, i) => {
          const outcome = outcomes[c.index] as Extract<AdmitOutcome, { kind: 'challenge' }>;
          outcome.body.expiresAt = expiries[i]!;
          if (c.data) outcome.body.challenge = c.data;
        });
        wrote = true;
      }
    } catch (error) {
      throw new AdmitWriteError(error, new Set());
    }
    // A batch that admits nothing has nothing to commit. Rolling back matters for timing: a row lock gives
    // the transaction an id, so its COMMIT waits for a WAL flush that an unknown token id (no row, no lock)
    // never pays; a wrong secret would otherwise be refused measurably slower than an unknown id.
    if (!rows.length && !wrote) {
      await client.query('ROLLBACK');
      return outcomes;
    }
    // The write and COMMIT go out together. A failed write aborts the transaction, and the COMMIT behind it
    // then rolls back: nothing was written, and the joins may be retried.
    const write = rows.length ? client.query({ name: 'bc-join-write', text: WRITE_ADMISSIONS_SQL, values: admissionParams(rows) }) : null;
    const commit = client.query('COMMIT');
    if (write) {
      try {
        await write;
      } catch (error) {
        await commit.catch(() => {});
        const fresh = new Set(rows.filter((r) => !r.decision.reclaim && r.join.trustedKey).map((r) => r.join.trustedKey!.toString('hex')));
        throw new AdmitWriteError(error, fresh);
      }
    }
    try {
      await commit;
    } catch (error) {
      throw new CommitError('COMMIT failed', { cause: error });
    }
    return outcomes;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

import { newId } from '../ids';
import type { JoinAnswerTrust } from '../pki/rotation/trust-state';
import { certificateTtlFor, issueNodeCertificate, type NodeCertificateRole } from '../pki/issuance/node-certificate';
import type { AdmitDeps } from './admit';
import type { LockedRows } from './admit-read';
import type { AdmissionRow } from './admit-sql';
import { attestorNamed } from './attestors';
import { isChallenge, isDeferral, type Attestor } from './attestors/types';
import { CHALLENGE_TTL_SECONDS, MAX_CHALLENGE_TTL_SECONDS, newNonce, type IssuedChallenge } from './challenges';
import { secretHashMatches } from './crypto/constant-time';
import { isFreshSeal } from './crypto/open-seal';
import type { PreparedJoin } from './prepare';
import type { Presigned } from './presign';
import type { RequestAdmission } from './request-admission';

// How a batch's joins are decided, in arrival order, against the rows its transaction locked: the answer
// each join gets, and what the transaction then writes.

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

/** What the batch holds once its rows are locked and its attestors have loaded theirs. */
interface BatchInput {
  joins: PreparedJoin[];
  deps: AdmitDeps;
  locked: LockedRows;
  /** Each join's certificate signed before the transaction, if any. */
  presigned: (Presigned | null)[];
  answerTrust: JoinAnswerTrust;
  requests: RequestAdmission;
  states: Map<Attestor<unknown>, unknown>;
}

/**
 * Decides each join in arrival order: its outcome (by index), the admissions to write and the challenges
 * to store. One use of a token is consumed per admission, so `maxUses` is exact.
 */
export function decideBatch({ joins, deps, locked, presigned, answerTrust, requests, states }: BatchInput) {
  const { now: notBefore, tokens, existing, bound, certified } = locked;
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
      early && !decision.reclaim && !decision.statements?.length && early.siteId === decision.siteId && early.certRole === decision.certRole
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
  return { outcomes, rows, challenges };
}

import type pg from 'pg';
import type { JoinCrypto } from '../pki/issuance/join-crypto';
import { joinAnswerTrust } from '../pki/rotation/trust-state';
import { lockedRows } from './admit-read';
import { decideBatch, type AdmitOutcome } from './admit-decide';
import { attestorNamed } from './attestors';
import type { Attestor } from './attestors/types';
import { insertChallenges } from './challenges';
import type { PreparedJoin } from './prepare';
import { BEGIN_ADMISSION_SQL, READ_ADMISSION_SQL, WRITE_ADMISSIONS_SQL, admissionParams, type AdmissionReadRow } from './admit-sql';
import type { CertificateHints } from './presign';
import {
  DEFAULT_NEW_REQUEST_LIMITS,
  admitChallenges,
  loadRequestAdmission,
  writeRequestAdmission,
  type NewRequestLimits,
} from './request-admission';

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
    deps.hints.observeDatabaseNow(row.now);
    const locked = lockedRows(row);
    const { tokens } = locked;

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

    const { outcomes, rows, challenges } = decideBatch({ joins, deps, locked, presigned, answerTrust, requests, states });
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

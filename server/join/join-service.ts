import type pg from 'pg';
import { isUniqueViolation } from '../db/errors';
import { logError } from '../log';
import type { JoinCrypto } from '../pki/issuance/join-crypto';
import { MAX_NODE_CERT_TTL_SECONDS } from '../pki/issuance/node-certificate';
import { AdmitWriteError, CommitError, admitBatch, type AdmitDeps } from './admit';
import type { AdmitOutcome } from './admit-decide';
import { signTrusted } from '../pki/rotation/trust-state';
import { inProcessPreparer, isPrepared, prepareJoin, type EarlyRefusal, type JoinPreparer, type PreparedJoin } from './prepare';
import { CertificateHints } from './presign';
import { RaceWindow } from './races';
import { AdmissionPipeline, type PipelineStats, type QueuedJoin } from './admission-pipeline';
import { recordRefusals, type RefusalLimit, type RefusalRecord } from './refusals';
import type { NewRequestLimits } from './request-admission';
import { JOIN_CONFLICT, JOIN_FAILED, JOIN_REFUSED, joinNotConfigured, type JoinAnswer } from '../../protocol/join-wire';
import { recordJoin, type ApiMetrics, type JoinTally } from '../metrics/api-metrics';

export interface JoinServiceOptions {
  pool: pg.Pool;
  /** JoinService's keys, or null when the server has none (every join is then INVALID_CONFIG). */
  loadCrypto: () => Promise<JoinCrypto | null>;
  /** The root tenant, which receives refusal events before a token's secret verified. */
  loadRootTenantId: () => Promise<string | null>;
  /** Node certificate lifetime; default and maximum 86,400 seconds. */
  certTtlSeconds?: number;
  /** Most joins admitted in one transaction. */
  maxBatch?: number;
  /**
   * Most admission transactions in flight at once, each on its own connection. Default 1 (one at a time):
   * on the 2-core bench machines, where agents, server and PostgreSQL already use both cores, 3 in flight
   * cost 1.54 ms of CPU per join against 1.23 with 1, for no measurable gain in joins/s (bench/join.ts
   * --compare, medians of 4 rounds); overlap pays only where a core sits idle while a transaction commits.
   */
  maxInFlight?: number;
  /** Fewest waiting joins that start a transaction beside one in flight (default 16). */
  minOverlapBatch?: number;
  /** The refusal-event rate limit (60 per attestor and reason per minute). */
  refusalLimit?: RefusalLimit;
  /** The new-join-request rate limits of every deferring attestor (DEFAULT_NEW_REQUEST_LIMITS). */
  requestLimits?: NewRequestLimits;
  /** Where `joinBody` prepares requests (worker threads in the server); on the calling thread by default. */
  preparer?: JoinPreparer;
  /** Where joins, batches and suppressed refusal events are counted (the composition root's registry); none by default. */
  metrics?: ApiMetrics;
}

/** How each admission outcome is counted (better_compute_joins_total). */
const OUTCOMES: Record<AdmitOutcome['kind'], Pick<JoinTally, 'outcome'>> = {
  joined: { outcome: 'admitted' },
  pending: { outcome: 'pending' },
  challenge: { outcome: 'challenge' },
  conflict: { outcome: 'conflict' },
  refused: { outcome: 'refused' },
  error: { outcome: 'error' },
};

/**
 * JoinService: turns a Join request into a signed answer. The CPU half (seal, CSR, hardware key) runs
 * per request; admissions are queued and committed in batches (AdmissionPipeline: the next batch opens its
 * transaction while the previous one commits), so joins that arrive together share one lock of their token
 * and one durable commit. A batch that fails on
 * a unique violation (a machine joining concurrently through another instance) is retried join by join,
 * and the join that collided answers CONFLICT; so does a join whose machine an earlier batch of this
 * process admitted while the join was waiting (RaceWindow).
 */
export class JoinService {
  private readonly certTtlSeconds: number;
  private readonly hints = new CertificateHints();
  private readonly races = new RaceWindow();
  private readonly pipeline: AdmissionPipeline;
  /** The keys the latest join was prepared with; a batch admits with them. */
  private crypto: JoinCrypto | null = null;

  constructor(private readonly options: JoinServiceOptions) {
    const ttl = options.certTtlSeconds ?? MAX_NODE_CERT_TTL_SECONDS;
    if (!Number.isInteger(ttl) || ttl < 60 || ttl > MAX_NODE_CERT_TTL_SECONDS) {
      throw new Error(`certTtlSeconds must be 60 to ${MAX_NODE_CERT_TTL_SECONDS}`);
    }
    this.certTtlSeconds = ttl;
    this.pipeline = new AdmissionPipeline(
      (batch, decided) => this.admitQueued(batch, decided),
      options.maxBatch ?? 128,
      options.maxInFlight ?? 1,
      options.minOverlapBatch,
      options.metrics,
    );
  }

  /** The admission pipeline's counters (batches, joins, time in batches, most in flight). */
  get pipelineStats(): PipelineStats {
    return this.pipeline.stats;
  }

  /** Answers a Join request from its body's bytes (null when absent or larger than the limit). */
  joinBody(body: Uint8Array | null, clientAddress?: string): Promise<JoinAnswer> {
    return this.answer((crypto) => (this.options.preparer ?? inProcessPreparer).prepare(body, crypto), clientAddress);
  }

  /** Answers a Join request whose body was already parsed as JSON. */
  join(raw: unknown, clientAddress?: string): Promise<JoinAnswer> {
    return this.answer(async (crypto) => prepareJoin(raw, crypto), clientAddress);
  }

  /** `clientAddress`: where the join came from (joinCallerAddress), recorded on its request or refusal event. */
  private async answer(prepare: (crypto: JoinCrypto) => Promise<PreparedJoin | EarlyRefusal>, clientAddress?: string): Promise<JoinAnswer> {
    const since = this.races.enter();
    const started = performance.now();
    // Filled in on the way to the answer; what is not known by then stays a server-side error.
    const tally: JoinTally = { attestor: '', role: '', outcome: 'error', reason: '' };
    try {
      return await this.answerFrom(since, prepare, tally, clientAddress);
    } finally {
      this.races.leave(since);
      if (this.options.metrics) recordJoin(this.options.metrics, tally, started);
    }
  }

  private async answerFrom(
    since: number,
    prepare: (crypto: JoinCrypto) => Promise<PreparedJoin | EarlyRefusal>,
    tally: JoinTally,
    clientAddress: string | undefined,
  ): Promise<JoinAnswer> {
    const crypto = await this.options.loadCrypto();
    if (!crypto) return joinNotConfigured('JoinService has no keys configured: run better-compute pki init and set BETTER_COMPUTE_SECRET');
    let prepared: PreparedJoin | EarlyRefusal;
    try {
      prepared = await prepare(crypto);
    } catch (error) {
      logError('join preparation failed', error);
      return JOIN_FAILED;
    }
    Object.assign(tally, { attestor: prepared.attestor, role: prepared.role });
    if (!isPrepared(prepared)) {
      Object.assign(tally, { outcome: 'refused', reason: prepared.reason });
      await this.refuse([{ ...prepared, tenantId: null, clientAddress }]);
      return JOIN_REFUSED;
    }
    if (clientAddress) prepared.clientAddress = clientAddress;
    this.crypto = crypto;
    const outcome = await new Promise<AdmitOutcome>((resolve) => this.pipeline.push({ join: prepared, since, resolve }));
    Object.assign(tally, OUTCOMES[outcome.kind], outcome.kind === 'refused' ? { reason: outcome.reason } : {});
    if (outcome.kind === 'joined' || outcome.kind === 'pending' || outcome.kind === 'challenge') {
      const envelope = signTrusted(crypto.trust, outcome.body);
      return { status: 200, body: Buffer.from(JSON.stringify(envelope)) };
    }
    if (outcome.kind === 'conflict') return JOIN_CONFLICT;
    if (outcome.kind === 'error') return JOIN_FAILED;
    await this.refuse([
      {
        attestor: prepared.attestor,
        reason: outcome.reason,
        role: prepared.role,
        csrSha256: prepared.csr.csrSha256,
        hardwareKey: prepared.hardware.key?.toString('hex') ?? null,
        tenantId: outcome.tenantId,
        // The token's id only once its secret verified (the event then goes to its tenant): an unverified id
        // is whatever the caller typed.
        tokenId: outcome.tenantId ? (prepared.token?.id ?? null) : null,
        expectField: outcome.expectField ?? null,
        clientAddress,
      },
    ]);
    return JOIN_REFUSED;
  }

  private async refuse(refusals: RefusalRecord[]) {
    try {
      await recordRefusals(
        this.options.pool,
        refusals,
        await this.options.loadRootTenantId(),
        this.options.refusalLimit,
        this.options.metrics,
      );
    } catch (error) {
      // A refusal stays a refusal when its event cannot be written; the failure is logged.
      logError('could not record join refusals', error);
    }
  }

  private async admitQueued(batch: QueuedJoin[], decided: () => void) {
    // Joins whose machine a batch admitted while they waited: the two joins raced.
    const racedJoins = new Set(
      batch.filter((p) => p.join.trustedKey !== null && this.races.raced(p.since, p.join.trustedKey.toString('hex'))).map((p) => p.join),
    );
    try {
      const rootTenantId = await this.options.loadRootTenantId();
      const deps = {
        crypto: this.crypto!,
        certTtlSeconds: this.certTtlSeconds,
        rootTenantId,
        hints: this.hints,
        racedJoins,
        onDecided: decided,
        ...(this.options.requestLimits ? { requestLimits: this.options.requestLimits } : {}),
      };
      const outcomes = await this.admit(
        batch.map((p) => p.join),
        deps,
      );
      this.races.record(
        batch.filter((p, i) => outcomes[i]!.kind === 'joined' && p.join.trustedKey).map((p) => p.join.trustedKey!.toString('hex')),
      );
      batch.forEach((p, i) => p.resolve(outcomes[i]!));
    } catch (error) {
      logError('join admission failed', error);
      for (const p of batch) p.resolve({ kind: 'error' });
    }
  }

  /**
   * Admits a batch; when its transaction fails, retries the joins one by one. A unique violation on the
   * hardware key means another instance inserted one of these machines meanwhile: the retry answers the
   * colliding join CONFLICT (not a reclaim of the node that just appeared). A failed COMMIT is never
   * retried, since the batch may have been written.
   */
  private async admit(joins: PreparedJoin[], deps: AdmitDeps): Promise<AdmitOutcome[]> {
    try {
      const client = await this.options.pool.connect();
      try {
        return await admitBatch(client, joins, deps);
      } finally {
        client.release();
      }
    } catch (error) {
      if (error instanceof CommitError) {
        logError('join admission commit failed', error.cause);
        return joins.map(() => ({ kind: 'error' as const }));
      }
      const raced = error instanceof AdmitWriteError && isUniqueViolation(error.cause);
      if (joins.length > 1) {
        const retryDeps = raced
          ? { ...deps, racedKeys: new Set([...(deps.racedKeys ?? []), ...(error as AdmitWriteError).freshKeys]) }
          : deps;
        const outcomes: AdmitOutcome[] = [];
        for (const join of joins) outcomes.push(...(await this.admit([join], retryDeps)));
        return outcomes;
      }
      if (raced) return [{ kind: 'conflict' }];
      logError('join admission failed', error instanceof AdmitWriteError ? error.cause : error);
      return [{ kind: 'error' }];
    }
  }
}

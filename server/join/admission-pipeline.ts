import type { AdmitOutcome } from './admit-decide';
import type { PreparedJoin } from './prepare';
import { attestorNamed } from './attestors';
import { observeAdmissionBatch, type ApiMetrics } from '../metrics/api-metrics';

/** A join waiting for its admission transaction. */
export interface QueuedJoin {
  join: PreparedJoin;
  /** The join's RaceWindow mark. */
  since: number;
  resolve: (outcome: AdmitOutcome) => void;
}

/**
 * Runs one batch: admits it and resolves every entry (never rejects). Calls `decided` once the batch holds
 * its locks and has decided, so the next batch may start while this one writes and commits.
 */
type RunBatch = (batch: QueuedJoin[], decided: () => void) => Promise<void>;

/** What the pipeline did so far, for the benchmark's profile. */
export interface PipelineStats {
  /** Batches finished (each one admission transaction, plus its one-by-one retries when it failed). */
  batches: number;
  joins: number;
  /** Sum of the batches' wall times, from taking the joins off the queue to the last answer. */
  batchMs: number;
  /** Most batches in flight at once. */
  peakInFlight: number;
}

interface Flight {
  keys: Set<string>;
  /** Still reading and deciding: no other batch starts until it has decided. */
  leading: boolean;
}

/**
 * What a join must not share with a batch in flight: its trusted machine and its CSR's key, so two joins
 * of one machine (or a replayed request) are never decided in two transactions at once, which could not
 * see each other's uncommitted rows; they go in one batch, or in consecutive ones where RaceWindow and the
 * certified-key check see the earlier outcome. An attestor adds keys of its own (Attestor.holdKeys): one
 * whose rows a concurrent batch's uncommitted writes would hide holds one key for all its joins.
 */
export function holdKeys(join: PreparedJoin): string[] {
  const keys = [`spki:${join.spkiSha256.toString('hex')}`];
  if (join.trustedKey) keys.push(`hk:${join.trustedKey.toString('hex')}`);
  const attestor = attestorNamed(join.attestor);
  if (attestor?.holdKeys) keys.push(...attestor.holdKeys(join));
  return keys;
}

/**
 * The admission queue, with up to `maxInFlight` transactions overlapping: a batch starts once the one
 * before it has taken its locks and decided, so it opens its transaction, signs early and queues for the
 * token's lock while the earlier one writes and waits for its durable commit. The token row's lock still
 * orders the transactions (each holds it only inside itself), so `maxUses` stays exact; the pipeline only
 * removes the idle time between one COMMIT and the next batch's first statement.
 *
 * Overlapping splits the queue into more, smaller transactions, and a transaction costs PostgreSQL about
 * as much CPU as twenty joins' rows (measured with bench/join.ts --compare-env): a batch starts beside
 * others only once `minOverlapBatch` joins wait, so a busy shared token on a CPU-bound machine keeps its
 * batches large, and the overlap pays where it helps, when joins arrive faster than one transaction admits.
 */
export class AdmissionPipeline {
  private queue: QueuedJoin[] = [];
  private readonly inFlight = new Set<Flight>();
  private scheduled = false;
  private readonly counters: PipelineStats = { batches: 0, joins: 0, batchMs: 0, peakInFlight: 0 };

  constructor(
    private readonly run: RunBatch,
    private readonly maxBatch: number,
    private readonly maxInFlight: number,
    private readonly minOverlapBatch = 16,
    private readonly metrics?: ApiMetrics,
  ) {
    if (!Number.isInteger(maxInFlight) || maxInFlight < 1) throw new Error('maxInFlight must be a positive integer');
  }

  push(entry: QueuedJoin): void {
    this.queue.push(entry);
    this.schedule();
  }

  get stats(): PipelineStats {
    return { ...this.counters };
  }

  // A turn of the event loop first: joins that arrive together form one batch.
  private schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump() {
    if (!this.queue.length || this.inFlight.size >= this.maxInFlight) return;
    for (const flight of this.inFlight) if (flight.leading) return;
    // Beside a batch in flight, only a batch worth its own transaction; the end of that batch pumps again.
    if (this.inFlight.size && this.queue.length < Math.min(this.minOverlapBatch, this.maxBatch)) return;
    const busy = new Set<string>();
    for (const flight of this.inFlight) for (const key of flight.keys) busy.add(key);
    const batch: QueuedJoin[] = [];
    const held: QueuedJoin[] = [];
    for (const entry of this.queue) {
      const free = batch.length < this.maxBatch && !holdKeys(entry.join).some((key) => busy.has(key));
      (free ? batch : held).push(entry);
    }
    this.queue = held;
    // Everything left waits on a batch in flight; its end pumps again.
    if (!batch.length) return;
    const flight: Flight = { keys: new Set(batch.flatMap((entry) => holdKeys(entry.join))), leading: true };
    this.inFlight.add(flight);
    this.counters.peakInFlight = Math.max(this.counters.peakInFlight, this.inFlight.size);
    const started = performance.now();
    const decided = () => {
      if (!flight.leading) return;
      flight.leading = false;
      this.schedule();
    };
    void this.run(batch, decided).finally(() => {
      this.counters.batches += 1;
      this.counters.joins += batch.length;
      this.counters.batchMs += performance.now() - started;
      if (this.metrics) observeAdmissionBatch(this.metrics, batch.length, (performance.now() - started) / 1000);
      this.inFlight.delete(flight);
      this.schedule();
    });
  }
}

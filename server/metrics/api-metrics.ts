import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { BATCH_SIZE_BUCKETS, LATENCY_BUCKETS } from './buckets';
import { attestorLabel, reasonLabel, roleLabel } from './labels';

/** The join outcomes `better_compute_joins_total` counts; `error` is a server-side failure (500/503), not a refusal. */
type JoinOutcome = 'admitted' | 'pending' | 'challenge' | 'refused' | 'conflict' | 'error';
type RenewalOutcome = 'renewed' | 'refused' | 'error';
/** One webhook delivery attempt: 2xx, another answer or no answer (retried), retries over, or the target refused (SSRF). */
export type WebhookOutcome = 'delivered' | 'failed' | 'gave_up' | 'refused';

/** What one join answer was, as JoinService learns it on the way. */
export interface JoinTally {
  attestor: string;
  role: string;
  outcome: JoinOutcome;
  reason: string;
}

/** The API's counters and histograms in a registry of their own; the composition root makes one per process. */
export function createApiMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    joins: new Counter({
      name: 'better_compute_joins_total',
      help: 'Join answers by attestor, requested role, outcome (admitted|pending|challenge|refused|conflict|error) and refusal reason (empty unless refused).',
      labelNames: ['attestor', 'role', 'outcome', 'reason'] as const,
      registers: [registry],
    }),
    joinDuration: new Histogram({
      name: 'better_compute_join_duration_seconds',
      help: 'Time from a join request reaching JoinService to its answer.',
      labelNames: ['attestor', 'outcome'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    batchSize: new Histogram({
      name: 'better_compute_admission_batch_size',
      help: 'Joins admitted together in one admission transaction.',
      buckets: BATCH_SIZE_BUCKETS,
      registers: [registry],
    }),
    batchSeconds: new Histogram({
      name: 'better_compute_admission_transaction_seconds',
      help: 'Wall time of one admission batch, from taking its joins off the queue to the last answer.',
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    renewals: new Counter({
      name: 'better_compute_renewals_total',
      help: 'Renewal answers by outcome (renewed|refused|error) and refusal reason (empty unless refused).',
      labelNames: ['outcome', 'reason'] as const,
      registers: [registry],
    }),
    renewalDuration: new Histogram({
      name: 'better_compute_renewal_duration_seconds',
      help: 'Time from a renewal request reaching RenewService to its answer.',
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    suppressed: new Counter({
      name: 'better_compute_refusal_events_suppressed_total',
      help: 'security.join.refused events this instance did not write because of the shared rate limit (60 per attestor and reason per minute).',
      labelNames: ['attestor', 'reason'] as const,
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: 'better_compute_webhook_deliveries_total',
      help: 'Webhook delivery attempts this instance made, by outcome (delivered|failed|gave_up|refused).',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
  };
}

export type ApiMetrics = ReturnType<typeof createApiMetrics>;

const seconds = (startedMs: number) => (performance.now() - startedMs) / 1000;

/** A join answered: counts it and observes its latency. `startedMs` is `performance.now()` when it arrived. */
export function recordJoin(m: ApiMetrics, tally: JoinTally, startedMs: number): void {
  const attestor = attestorLabel(tally.attestor);
  m.joins.inc({
    attestor,
    role: roleLabel(tally.role),
    outcome: tally.outcome,
    reason: tally.outcome === 'refused' ? reasonLabel(tally.reason) : '',
  });
  m.joinDuration.observe({ attestor, outcome: tally.outcome }, seconds(startedMs));
}

/** One admission batch finished: its size and wall time. */
export function observeAdmissionBatch(m: ApiMetrics, size: number, wallSeconds: number): void {
  m.batchSize.observe(size);
  m.batchSeconds.observe(wallSeconds);
}

/** A renewal answered. */
export function recordRenewal(m: ApiMetrics, outcome: RenewalOutcome, reason: string, startedMs: number): void {
  m.renewals.inc({ outcome, reason: outcome === 'refused' ? reasonLabel(reason) : '' });
  m.renewalDuration.observe(seconds(startedMs));
}

/** Refusal events the shared rate limit dropped (recordRefusals learns how many it wrote). */
export function recordSuppressedRefusals(
  m: ApiMetrics,
  refusals: ReadonlyArray<{ attestor: string; reason: string }>,
  written: number,
): void {
  // The database answers only how many of the batch it wrote; JoinService records refusals one at a time,
  // so the dropped ones are the last `length - written` of the batch in the usual case of one.
  const dropped = refusals.slice(Math.max(0, written));
  for (const r of dropped) m.suppressed.inc({ attestor: attestorLabel(r.attestor), reason: reasonLabel(r.reason) });
}

/** A webhook delivery attempt ended. */
export function recordWebhookAttempt(m: ApiMetrics, outcome: WebhookOutcome): void {
  m.webhookDeliveries.inc({ outcome });
}

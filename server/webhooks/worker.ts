import type pg from 'pg';
import { ChannelListener } from '../db/listen';
import { AddressRefused, requestPinned } from '../http/pinned-request';
import { logError } from '../log';
import { recordWebhookAttempt, type ApiMetrics, type WebhookOutcome } from '../metrics/api-metrics';
import { retryDelayMs, type WebhookSettings } from './config';
import { WEBHOOK_DELIVERIES_CHANNEL } from './deliveries';
import { publishExpiredJoinRequests } from './expiry';
import { openWebhookSecret, signWebhook } from './secret';
import { resolveWebhookTarget } from './target';

// Plain SQL on the worker's own pg pool (docs/decisions/typed-sql.md): the claim, the batched success record and
// the failure count run per delivery attempt, as named prepared statements, off any request's transaction;
// bench/webhooks.ts measures them. test/sql-check.test.ts PREPAREs each against the migrated schema.

/**
 * Claims due deliveries: `FOR UPDATE SKIP LOCKED` so instances never take the same row, and the claim pushes
 * `next_attempt_at` past the attempt's time bound (a lease), so the row stays out of every other claim while
 * this instance sends it without a transaction open. If this instance dies mid-attempt, the lease runs out
 * and another instance sends it again, under the same `webhook-id`. Only enabled subscriptions' rows are due.
 */
const CLAIM = `
WITH due AS (
  SELECT d.id FROM webhook_deliveries d
    JOIN webhook_subscriptions s ON s.id = d.subscription_id AND s.enabled
   WHERE d.state = 'pending' AND d.next_attempt_at <= now() AND ($3::text[] IS NULL OR d.tenant_id = ANY ($3::text[]))
   ORDER BY d.next_attempt_at
   LIMIT $1
     FOR UPDATE OF d SKIP LOCKED
)
UPDATE webhook_deliveries d SET next_attempt_at = now() + $2 * interval '1 millisecond', attempts = d.attempts + 1
  FROM due, webhook_subscriptions s
 WHERE d.id = due.id AND s.id = d.subscription_id
RETURNING d.id, d.subscription_id, d.tenant_id, d.body, d.attempts, s.url, s.sealed_secret`;

/** Records the successes of several attempts in one statement (they arrive together under load). */
const DELIVERED = `
WITH r AS (
  SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::int[], $4::int[]) AS r(id, at, status, latency)
), d AS (
  UPDATE webhook_deliveries w SET state = 'delivered', delivered_at = now(), last_attempt_at = r.at, last_status = r.status,
         last_latency_ms = r.latency, last_error = NULL
    FROM r
   WHERE w.id = r.id AND w.state = 'pending'
  RETURNING w.subscription_id
)
UPDATE webhook_subscriptions SET consecutive_failures = 0, failing_since = NULL
 WHERE id IN (SELECT subscription_id FROM d) AND (consecutive_failures <> 0 OR failing_since IS NOT NULL)`;

const FAILED = `
UPDATE webhook_deliveries SET last_attempt_at = $2, last_status = $3, last_latency_ms = $4, last_error = $5,
       state = CASE WHEN now() >= retry_from + $6 * interval '1 millisecond' THEN 'failed' ELSE 'pending' END,
       next_attempt_at = now() + $7 * interval '1 millisecond'
 WHERE id = $1 AND state = 'pending'
RETURNING state`;

/**
 * Counts a failure against the subscription and disables it, publishing `webhook.subscription.disabled`, once
 * its deliveries have failed without a success for `disableAfterMs` and at least `disableMinFailures` times.
 */
const COUNT_FAILURE = `
UPDATE webhook_subscriptions SET consecutive_failures = consecutive_failures + 1, failing_since = coalesce(failing_since, now())
 WHERE id = $1
RETURNING tenant_id, url, enabled, consecutive_failures, failing_since <= now() - $2 * interval '1 millisecond' AS failing_long`;

const DISABLE = `
WITH off AS (
  UPDATE webhook_subscriptions SET enabled = false, disabled_reason = $2, updated_at = now()
   WHERE id = $1 AND enabled
  RETURNING id, tenant_id, url, event_types, consecutive_failures, failing_since
)
INSERT INTO events (tenant_id, type, data)
SELECT tenant_id, 'webhook.subscription.disabled',
       jsonb_build_object('webhookId', id, 'url', url, 'eventTypes', event_types, 'reason', $2::text,
                          'consecutiveFailures', consecutive_failures, 'failingSince', failing_since)
  FROM off`;

type Claimed = {
  id: string;
  subscription_id: string;
  tenant_id: string;
  body: string;
  attempts: number;
  url: string;
  sealed_secret: Buffer;
};

interface WebhookWorkerOptions {
  pool: pg.Pool;
  /** For LISTEN; without it the worker relies on its sweep alone. */
  databaseUrl?: string;
  settings: WebhookSettings;
  /** The server secrets that open sealed signing secrets (serverSecrets()). */
  secrets: () => string[];
  /** Claim only these tenants' deliveries (tests sharing one database each run their own worker); all by default. */
  onlyTenants?: string[];
  /** The process's metrics (the composition root's); none in tests that do not count. */
  metrics?: ApiMetrics;
}

/**
 * One instance's delivery worker: woken by NOTIFY on {@link WEBHOOK_DELIVERIES_CHANNEL} (the outbox trigger,
 * a test or a redelivery), and by a sweep every `sweepMs` (retries come due; a missed notification). Every
 * API instance runs one; SKIP LOCKED claims share the work among them.
 */
export class WebhookWorker {
  private listener: ChannelListener<true> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private inFlight = 0;
  private pumping = false;
  private again = false;
  private stopped = false;
  private idle: (() => void)[] = [];
  private lastExpirySweep = 0;
  /** Successes waiting for the statement that records them; `flushing` is that statement, while it runs. */
  private delivered: { id: string; at: Date; status: number; latency: number; done: () => void; failed: (error: unknown) => void }[] = [];
  private flushing: Promise<void> | null = null;

  constructor(private readonly options: WebhookWorkerOptions) {}

  async start(): Promise<void> {
    if (this.options.databaseUrl) {
      this.listener = new ChannelListener(this.options.databaseUrl, WEBHOOK_DELIVERIES_CHANNEL, () => true);
      await this.listener.subscribe(() => this.wake());
    }
    this.timer = setInterval(() => this.wake(true), this.options.settings.sweepMs);
    this.timer.unref();
    this.wake(true);
  }

  /** Stops claiming; resolves when the attempts in flight have ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.listener?.close();
    if (this.inFlight > 0 || this.pumping) await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  /** Claims and sends what is due now. */
  wake(sweep = false): void {
    if (this.stopped) return;
    if (sweep && Date.now() - this.lastExpirySweep >= Math.max(this.options.settings.sweepMs, 5_000)) {
      this.lastExpirySweep = Date.now();
      void publishExpiredJoinRequests(this.options.pool).catch((error) => logError('publishing expired join requests failed', error));
    }
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void this.pump()
      .catch((error) => logError('webhook delivery claim failed', error))
      .finally(() => {
        this.pumping = false;
        if (this.again && !this.stopped) {
          this.again = false;
          this.wake();
        } else this.settle();
      });
  }

  private settle() {
    if (this.inFlight > 0 || this.pumping) return;
    const waiting = this.idle;
    this.idle = [];
    for (const resolve of waiting) resolve();
  }

  private async pump(): Promise<void> {
    const { settings, pool } = this.options;
    while (!this.stopped) {
      const room = settings.concurrency - this.inFlight;
      // Full: each attempt that ends wakes the worker again, so nothing due is left behind.
      if (room <= 0) return;
      const claimed = (
        await pool.query<Claimed>({
          name: 'webhook-claim',
          text: CLAIM,
          values: [room, settings.timeoutMs + 30_000, this.options.onlyTenants ?? null],
        })
      ).rows;
      for (const delivery of claimed) {
        this.inFlight++;
        void this.attempt(delivery)
          .catch((error) => logError('webhook delivery failed to record', error))
          .finally(() => {
            this.inFlight--;
            if (!this.stopped) this.wake();
            else this.settle();
          });
      }
      if (claimed.length < room) return;
    }
  }

  private async attempt(delivery: Claimed): Promise<void> {
    const { settings, pool } = this.options;
    const started = new Date();
    const t0 = performance.now();
    let status: number | null = null;
    let error: string | null = null;
    let refused = false;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error(`no answer within ${settings.timeoutMs} ms`)), settings.timeoutMs);
    try {
      const url = new URL(delivery.url);
      const secret = openWebhookSecret(delivery.sealed_secret, delivery.subscription_id, this.options.secrets());
      const timestamp = Math.floor(Date.now() / 1000);
      const targets = await resolveWebhookTarget(url, settings.allowPrivate);
      const answer = await requestPinned(url, targets, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'better-compute-webhooks/1',
          'webhook-id': delivery.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWebhook(secret, delivery.id, timestamp, delivery.body),
        },
        body: delivery.body,
        maxBodyBytes: settings.maxResponseBytes,
        signal: controller.signal,
      });
      status = answer.status;
      if (status < 200 || status > 299)
        error = `HTTP ${status}: ${answer.body
          .subarray(0, 256)
          .toString('utf8')
          .replace(/[^\x20-\x7e]+/g, ' ')
          .trim()}`.trim();
    } catch (caught) {
      refused = caught instanceof AddressRefused;
      error = refused
        ? `refused: ${(caught as Error).message}, not a public address`
        : controller.signal.aborted
          ? String((controller.signal.reason as Error).message)
          : caught instanceof Error
            ? caught.message
            : String(caught);
    } finally {
      clearTimeout(timer);
    }
    const latency = Math.round(performance.now() - t0);
    if (error === null) {
      await new Promise<void>((done, failed) => {
        this.delivered.push({ id: delivery.id, at: started, status: status!, latency, done, failed });
        this.flushDelivered();
      });
      if (this.options.metrics) recordWebhookAttempt(this.options.metrics, 'delivered');
      return;
    }
    const delay = retryDelayMs(settings, delivery.attempts);
    const failed = await pool.query<{ state: string }>({
      name: 'webhook-failed',
      text: FAILED,
      values: [delivery.id, started, status, latency, error.slice(0, 500), settings.retryWindowMs, delay],
    });
    const outcome: WebhookOutcome = failed.rows[0]?.state === 'failed' ? 'gave_up' : refused ? 'refused' : 'failed';
    if (this.options.metrics) recordWebhookAttempt(this.options.metrics, outcome);
    await this.countFailure(delivery.subscription_id);
  }

  /** Records every success waiting, in one statement; the ones that arrive meanwhile go in the next. */
  private flushDelivered(): void {
    if (this.flushing || !this.delivered.length) return;
    const batch = this.delivered;
    this.delivered = [];
    this.flushing = this.options.pool
      .query({
        name: 'webhook-delivered',
        text: DELIVERED,
        values: [batch.map((b) => b.id), batch.map((b) => b.at), batch.map((b) => b.status), batch.map((b) => b.latency)],
      })
      .then(
        () => batch.forEach((b) => b.done()),
        (error: unknown) => batch.forEach((b) => b.failed(error)),
      )
      .finally(() => {
        this.flushing = null;
        this.flushDelivered();
      });
  }

  private async countFailure(subscriptionId: string): Promise<void> {
    const { settings, pool } = this.options;
    const counted = (
      await pool.query<{ enabled: boolean; consecutive_failures: number; failing_long: boolean }>({
        name: 'webhook-count-failure',
        text: COUNT_FAILURE,
        values: [subscriptionId, settings.disableAfterMs],
      })
    ).rows[0];
    if (!counted?.enabled || !counted.failing_long || counted.consecutive_failures < settings.disableMinFailures) return;
    const reason = `every delivery failed for ${Math.round(settings.disableAfterMs / 1000)} s (${counted.consecutive_failures} attempts in a row)`;
    await pool.query({ name: 'webhook-disable', text: DISABLE, values: [subscriptionId, reason] });
  }
}

import type pg from 'pg';
import { Gauge, type Registry } from 'prom-client';
import { WAIT_BUCKETS } from './buckets';
import type { SharedStateReader } from './shared-state';

/**
 * A histogram whose buckets are counted in PostgreSQL at scrape time (prom-client's Histogram only counts
 * observations of this process). Every instance reports the same cumulative values.
 */
class WaitHistogram {
  readonly name = 'better_compute_join_request_wait_seconds';
  readonly help =
    'How long join requests waited, created to decided (approved|rejected) or to expiry (expired); read from PostgreSQL, the same on every instance.';
  readonly type = 'histogram';
  readonly aggregator = 'first';
  constructor(private readonly state: SharedStateReader) {}

  async get() {
    const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
    for (const w of (await this.state.get()).waits) {
      const labels = { site: w.site, decision: w.decision };
      WAIT_BUCKETS.forEach((le, i) => values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le }, value: w.buckets[i]! }));
      values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: w.count });
      values.push({ metricName: `${this.name}_sum`, labels, value: w.sum });
      values.push({ metricName: `${this.name}_count`, labels, value: w.count });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset() {}
}

type Row = Record<string, string | number>;

/** A gauge re-filled from the shared snapshot on every scrape (series that vanished from the database vanish here). */
function sharedGauge<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: L[],
  rows: (s: Awaited<ReturnType<SharedStateReader['get']>>) => Array<Row>,
  state: SharedStateReader,
) {
  return new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect() {
      const snapshot = await state.get();
      this.reset();
      for (const row of rows(snapshot)) {
        const { count, ...labels } = row as Row & { count: number };
        this.set(labels as Partial<Record<L, string>>, Number(count));
      }
    },
  });
}

/** Registers the gauges of shared state (PostgreSQL) and of this process's connection pool. */
export function registerSharedCollectors(registry: Registry, state: SharedStateReader, pgPool: () => pg.Pool | undefined) {
  sharedGauge(
    registry,
    'better_compute_join_requests',
    'Join requests by site and effective state (pending past its expiry counts as expired).',
    ['site', 'state'],
    (s) => s.joinRequests,
    state,
  );
  sharedGauge(
    registry,
    'better_compute_join_request_oldest_pending_seconds',
    'Age of the oldest pending join request per site.',
    ['site'],
    (s) => s.oldestPending.map((o) => ({ site: o.site, count: o.seconds })),
    state,
  );
  sharedGauge(registry, 'better_compute_nodes', 'Nodes by pool and state.', ['pool', 'state'], (s) => s.nodes, state);
  sharedGauge(
    registry,
    'better_compute_node_certificates_expiring',
    'Live nodes whose current certificate expires within 1h, 6h or 24h, per pool.',
    ['pool', 'within'],
    (s) => s.expiring,
    state,
  );
  sharedGauge(
    registry,
    'better_compute_join_tokens_active',
    'Join tokens that can still admit a machine (not revoked, not expired, uses left), per pool.',
    ['pool'],
    (s) => s.tokensActive,
    state,
  );
  sharedGauge(
    registry,
    'better_compute_nodes_connected',
    'Nodes with a live session (their gateway holds a live lease), per pool.',
    ['pool'],
    (s) => s.connected,
    state,
  );
  sharedGauge(
    registry,
    'better_compute_nodes_by_trust_version',
    'Nodes not retired, by the trust set version their agent holds (reported by Hello or sent on a session): the newest three versions, older ones as "older", none as "none".',
    ['trust_version'],
    (s) => s.trustVersions,
    state,
  );
  registry.registerMetric(new WaitHistogram(state) as never);
  new Gauge({
    name: 'better_compute_pg_pool_connections',
    help: "This process's PostgreSQL pool for joins, renewals and metrics: connections in use or idle.",
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const pool = pgPool();
      this.set({ state: 'in_use' }, pool ? pool.totalCount - pool.idleCount : 0);
      this.set({ state: 'idle' }, pool ? pool.idleCount : 0);
    },
  });
  new Gauge({
    name: 'better_compute_pg_pool_waiting',
    help: "Queries waiting for a connection of this process's PostgreSQL pool.",
    registers: [registry],
    collect() {
      this.set(pgPool()?.waitingCount ?? 0);
    },
  });
}

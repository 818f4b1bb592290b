import type pg from 'pg';
import { EXPIRY_WINDOWS } from './buckets';
import { CONNECTED_SQL, EXPIRING_SQL, WAIT_SQL } from './shared-state-sql';

/**
 * The fleet's shared state as the gauges describe it, read from PostgreSQL so that every instance answers
 * the same numbers. Each read is a handful of grouped queries over indexed columns; `SharedStateReader`
 * caches one snapshot for a few seconds so N scrapers cost one read.
 */
interface SharedState {
  joinRequests: Array<{ site: string; state: string; count: number }>;
  oldestPending: Array<{ site: string; seconds: number }>;
  /** Per site and decision (approved|rejected|expired): cumulative counts per WAIT_BUCKETS bound, count and sum. */
  waits: Array<{ site: string; decision: string; buckets: number[]; count: number; sum: number }>;
  nodes: Array<{ pool: string; state: string; count: number }>;
  /** Current certificates of live nodes expiring within each window of EXPIRY_WINDOWS, per pool. */
  expiring: Array<{ pool: string; within: string; count: number }>;
  tokensActive: Array<{ pool: string; count: number }>;
  /** Nodes with a live session, per pool that has nodes (0 included, so the series stays while all are away). */
  connected: Array<{ pool: string; count: number }>;
  /** Non-retired nodes by the trust set version they hold ({@link trustVersionSeries}). */
  trustVersions: Array<{ trust_version: string; count: number }>;
}

/** Trust set versions with a series of their own: the newest this many that nodes hold. */
const TRUST_VERSION_SERIES = 3;

/**
 * Nodes per trust set version as a bounded set of series: the newest {@link TRUST_VERSION_SERIES} versions
 * held by any node each get their own, every lower version counts as `older`, and nodes that hold none (or
 * never said Hello since versions are recorded) as `none`. `older` and `none` are always present.
 */
export function trustVersionSeries(rows: ReadonlyArray<{ version: number; count: number }>): SharedState['trustVersions'] {
  const versions = [...new Set(rows.filter((r) => r.version > 0).map((r) => r.version))].sort((a, b) => b - a);
  const own = new Set(versions.slice(0, TRUST_VERSION_SERIES));
  const counts = new Map<string, number>([
    ['none', 0],
    ['older', 0],
  ]);
  for (const row of rows) {
    const label = row.version <= 0 ? 'none' : own.has(row.version) ? String(row.version) : 'older';
    counts.set(label, (counts.get(label) ?? 0) + row.count);
  }
  return [...counts].map(([trust_version, count]) => ({ trust_version, count }));
}

const n = (v: unknown) => Number(v ?? 0);

// The rows of the queries below; counts arrive as numbers (`::int`), sums and buckets as PostgreSQL sends them.
type SiteStateCount = { site: string; state: string; count: number };
type PoolCount = { pool: string; count: number };

export async function readSharedState(pool: pg.Pool): Promise<SharedState> {
  const [requests, oldest, waits, nodes, expiring, tokens, connected, trustVersions] = await Promise.all([
    pool.query<SiteStateCount>(`SELECT site_id AS site, CASE WHEN state IN ('pending', 'approved') AND expires_at <= compute_now() THEN 'expired' ELSE state END AS state,
                       count(*)::int AS count
                  FROM join_requests GROUP BY 1, 2`),
    pool.query<{
      site: string;
      seconds: number;
    }>(`SELECT site_id AS site, extract(epoch FROM compute_now() - min(created_at))::float8 AS seconds
                  FROM join_requests WHERE state = 'pending' AND expires_at > compute_now() GROUP BY site_id`),
    pool.query<{ site: string; decision: string; buckets: number[]; count: number; sum: number }>(WAIT_SQL),
    pool.query<PoolCount & { state: string }>(
      `SELECT coalesce(pool_id, '') AS pool, state, count(*)::int AS count FROM nodes GROUP BY 1, 2`,
    ),
    pool.query<{ pool: string } & Record<(typeof EXPIRY_WINDOWS)[number][0], number>>(EXPIRING_SQL),
    pool.query<PoolCount>(`SELECT coalesce(pool_id, '') AS pool, count(*)::int AS count FROM join_tokens
                 WHERE revoked_at IS NULL AND expires_at > compute_now() AND uses_left > 0 GROUP BY 1`),
    pool.query<PoolCount>(CONNECTED_SQL),
    pool.query<{ version: number; count: number }>(
      `SELECT COALESCE(trust_version, 0) AS version, count(*)::int AS count FROM nodes WHERE state <> 'retired' GROUP BY 1`,
    ),
  ]);
  return {
    joinRequests: requests.rows.map((r) => ({ site: r.site, state: r.state, count: n(r.count) })),
    oldestPending: oldest.rows.map((r) => ({ site: r.site, seconds: n(r.seconds) })),
    waits: waits.rows.map((r) => ({ site: r.site, decision: r.decision, buckets: r.buckets.map(n), count: n(r.count), sum: n(r.sum) })),
    nodes: nodes.rows.map((r) => ({ pool: r.pool, state: r.state, count: n(r.count) })),
    expiring: expiring.rows.flatMap((r) => EXPIRY_WINDOWS.map(([within]) => ({ pool: r.pool, within, count: n(r[within]) }))),
    tokensActive: tokens.rows.map((r) => ({ pool: r.pool, count: n(r.count) })),
    connected: connected.rows.map((r) => ({ pool: r.pool, count: n(r.count) })),
    trustVersions: trustVersionSeries(trustVersions.rows.map((r) => ({ version: n(r.version), count: n(r.count) }))),
  };
}

/** One snapshot per `ttlMs`; concurrent scrapes share the read in flight. */
export class SharedStateReader {
  private cached: { at: number; value: Promise<SharedState> } | null = null;

  constructor(
    private readonly read: () => Promise<SharedState>,
    private readonly ttlMs = 5_000,
    private readonly now = () => Date.now(),
  ) {}

  get(): Promise<SharedState> {
    const t = this.now();
    if (!this.cached || t - this.cached.at >= this.ttlMs) {
      const value = this.read();
      this.cached = { at: t, value };
      // A failed read is not kept: the next scrape tries again.
      value.catch(() => {
        if (this.cached?.value === value) this.cached = null;
      });
    }
    return this.cached.value;
  }
}

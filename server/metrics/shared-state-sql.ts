import { EXPIRY_WINDOWS, WAIT_BUCKETS } from './buckets';

// The metrics scrape's statements (server/metrics/shared-state.ts). They stay plain SQL on the server's pg pool
// (docs/decisions/typed-sql.md): every scrape of every instance reads the whole fleet's state, eight grouped
// statements in parallel, and bench/overview.ts measures it on a large fleet. WAIT_SQL and EXPIRING_SQL splice in
// the bucket bounds, so test/sql-check.test.ts PREPAREs the exported values.

/** Wait of a decided or expired request: created → decided, or created → expiry for one nobody decided. */
export const WAIT_SQL = `
  SELECT site_id AS site, decision, count(*)::int AS count, coalesce(sum(w), 0)::float8 AS sum,
         ARRAY[${WAIT_BUCKETS.map((b) => `count(*) FILTER (WHERE w <= ${b})::int`).join(', ')}] AS buckets
    FROM (
      SELECT site_id,
             CASE WHEN decided_at IS NOT NULL THEN (CASE WHEN state = 'rejected' THEN 'rejected' ELSE 'approved' END) ELSE 'expired' END AS decision,
             extract(epoch FROM coalesce(decided_at, expires_at) - created_at)::float8 AS w
        FROM join_requests
       WHERE decided_at IS NOT NULL OR (state IN ('pending', 'expired') AND expires_at <= compute_now())
    ) w
   GROUP BY site_id, decision`;

/** Live nodes whose current certificate (nodes.cert_not_after, kept by triggers) is still valid, per window. */
export const EXPIRING_SQL = `
  SELECT coalesce(pool_id, '') AS pool,
         ${EXPIRY_WINDOWS.map(([label, s]) => `count(*) FILTER (WHERE cert_not_after <= compute_now() + interval '${s} seconds')::int AS "${label}"`).join(', ')}
    FROM nodes
   WHERE state <> 'retired' AND cert_not_after > compute_now()
   GROUP BY 1`;

/**
 * Connected as `nodes.list` and `pools.counts` read it: a session whose gateway's lease is live (a dead
 * gateway's sessions stop counting when its lease runs out, whatever rows it left behind).
 */
export const CONNECTED_SQL = `
  SELECT coalesce(n.pool_id, '') AS pool, count(DISTINCT n.id) FILTER (WHERE g.gateway_id IS NOT NULL)::int AS count
    FROM nodes n
    LEFT JOIN node_sessions s ON s.node_id = n.id
    LEFT JOIN gateway_leases g ON g.gateway_id = s.gateway_id AND g.expires_at > compute_now()
   GROUP BY 1`;

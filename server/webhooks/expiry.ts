import type pg from 'pg';

// Plain SQL on the webhook worker's pg pool, run from its sweep (docs/decisions/typed-sql.md); checked by
// test/sql-check.test.ts.

/**
 * Publishes `node.join-request.expired` once for each join request that reached its expiry pending (nobody
 * decided) or approved (the machine never came back), at the database's clock. Every instance runs it from
 * its webhook sweep; SKIP LOCKED and the marker column make each request published exactly once. The event
 * goes through the events table like any other, so the console's events page and the webhook outbox see it.
 */
const PUBLISH_EXPIRED = `
WITH expired AS (
  UPDATE join_requests j SET expiry_published_at = compute_now()
    FROM (SELECT id FROM join_requests
           WHERE state IN ('pending', 'approved') AND expiry_published_at IS NULL AND expires_at <= compute_now()
             AND tenant_id IS NOT NULL
           ORDER BY expires_at
           LIMIT 500
             FOR UPDATE SKIP LOCKED) due
   WHERE j.id = due.id
  RETURNING j.id, j.tenant_id, j.site_id, j.pool_id, j.attestor, j.state, j.expires_at
)
INSERT INTO events (tenant_id, type, data)
SELECT tenant_id, 'node.join-request.expired',
       jsonb_build_object('requestId', id, 'siteId', site_id, 'poolId', pool_id, 'attestor', attestor, 'state', state,
                          'expiresAt', to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
  FROM expired ORDER BY expires_at`;

/** Returns how many requests it published. */
export async function publishExpiredJoinRequests(pool: pg.Pool): Promise<number> {
  const result = await pool.query({ name: 'join-requests-expired', text: PUBLISH_EXPIRED });
  return result.rowCount ?? 0;
}

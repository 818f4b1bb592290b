import { Prisma } from '../db/generated/client';
import { JOIN_REQUESTS_CHANNEL } from './request-store-sql';
import { RECORD_COLUMNS } from './records';

type Decision = 'approved' | 'rejected';

/**
 * One statement decides, publishes `security.join-request.<decision>`, writes the audit row naming the
 * operator and the reason, and NOTIFYs the queue's listeners: a decision is either all of these or none.
 * `set` and `guard` are the decision's own; expiry is read at the database's clock.
 */
export function decideStatement(decision: Decision, ids: string[], visible: Prisma.Sql, actor: string, set: Prisma.Sql, guard: Prisma.Sql) {
  return Prisma.sql`
    WITH decided AS (
      UPDATE join_requests SET state = ${decision}, decided_at = compute_now(), decided_by = ${actor}, ${set}
       WHERE id = ANY(${ids}::text[]) AND ${visible} AND ${guard}
      RETURNING *
    ), published AS (
      INSERT INTO events (tenant_id, type, data)
      SELECT tenant_id, ${`security.join-request.${decision}`},
             jsonb_build_object('requestId', id, 'siteId', site_id, 'poolId', pool_id, 'attestor', attestor, 'decidedBy', decided_by, 'reason', reason)
        FROM decided
      RETURNING 1
    ), audited AS (
      INSERT INTO audit_log (tenant_id, actor, action, resource, data)
      SELECT tenant_id, ${actor}, ${`join-request.${decision}`}, 'compute-join-request/' || id,
             jsonb_build_object('poolId', pool_id, 'siteId', site_id, 'reason', reason, 'expiresAt', expires_at, 'csrSha256', csr_sha256)
        FROM decided
      RETURNING 1
    ), notified AS (
      SELECT pg_notify(${JOIN_REQUESTS_CHANNEL}, json_build_object('tenantId', tenant_id, 'siteId', site_id, 'requestIds', json_agg(id))::text)
        FROM decided GROUP BY tenant_id, site_id
    )
    SELECT ${RECORD_COLUMNS}, (SELECT count(*) FROM notified) AS notified FROM decided`;
}

import { Prisma } from '../db/generated/client';
import { JOIN_REQUESTS_CHANNEL } from './request-store-sql';
import { RECORD_COLUMNS } from './records';
import { samePersonActors } from './same-person-sql';

/** The request's site setting, read in the deciding statement itself (1 or 2 approvals). */
export const REQUIRED_APPROVALS = Prisma.sql`(SELECT s.required_approvals FROM sites s WHERE s.id = join_requests.site_id)`;

/**
 * Which pending requests `actor` may approve into `poolId`: any on a one-approval site; on a two-person site,
 * one with no approval yet, or one whose first approval is another person's into the same pool. A caller
 * cannot confirm its own approval, through a session or any key of theirs (samePersonActors), and the second
 * approval cannot move the machine to another pool.
 */
function secondApprovalGuard(actor: string, poolId: string): Prisma.Sql {
  return Prisma.sql`(${REQUIRED_APPROVALS} < 2 OR join_requests.first_approved_by IS NULL
    OR (join_requests.first_approved_by NOT IN ${samePersonActors(actor)} AND join_requests.first_approval_pool_id = ${poolId}))`;
}

/**
 * secondApprovalGuard for a scan over the queue: the two-person sites are read once into a hash rather than
 * each request's site looked up per row.
 */
export function secondApprovalScanGuard(actor: string, poolId: string): Prisma.Sql {
  return Prisma.sql`(join_requests.site_id NOT IN (SELECT s.id FROM sites s WHERE s.required_approvals >= 2)
    OR join_requests.first_approved_by IS NULL
    OR (join_requests.first_approved_by NOT IN ${samePersonActors(actor)} AND join_requests.first_approval_pool_id = ${poolId}))`;
}

/**
 * One statement approves: on a one-approval site, or when another person's first approval is there, the
 * request becomes `approved` (as decideStatement, publishing `security.join-request.approved` with
 * `firstApprovedBy`); on a two-person site without a first approval, the caller's approval is recorded
 * (`first_approved_by`, `_at`, `first_approval_pool_id`), the request stays pending, and
 * `node.join-request.approval-recorded` is published and audited. Both NOTIFY the queue. Race-safe: the row
 * lock makes a concurrent second approver re-read the row, so two people at once admit exactly once and
 * the same person twice (through any of their identities) records once. `labels` (the node gets them at
 * admission) merge over what an earlier approval gave: the second of two approvals overrides the first's keys.
 */
export function approveStatement(
  ids: string[],
  visible: Prisma.Sql,
  actor: string,
  poolId: string,
  reason: string | null,
  ttlSeconds: number,
  guard: Prisma.Sql,
  labels: Record<string, string> = {},
) {
  const admits = Prisma.sql`(${REQUIRED_APPROVALS} < 2 OR join_requests.first_approved_by IS NOT NULL)`;
  const records = Prisma.sql`(${REQUIRED_APPROVALS} >= 2 AND join_requests.first_approved_by IS NULL)`;
  return Prisma.sql`
    WITH decided AS (
      UPDATE join_requests SET
        state = CASE WHEN ${admits} THEN 'approved' ELSE state END,
        decided_at = CASE WHEN ${admits} THEN compute_now() ELSE decided_at END,
        decided_by = CASE WHEN ${admits} THEN ${actor} ELSE decided_by END,
        pool_id = CASE WHEN ${admits} THEN ${poolId} ELSE pool_id END,
        reason = CASE WHEN ${admits} THEN ${reason}::text ELSE reason END,
        expires_at = CASE WHEN ${admits} THEN compute_now() + ${ttlSeconds}::int * interval '1 second' ELSE expires_at END,
        first_approved_by = CASE WHEN ${records} THEN ${actor} ELSE first_approved_by END,
        first_approved_at = CASE WHEN ${records} THEN compute_now() ELSE first_approved_at END,
        first_approval_pool_id = CASE WHEN ${records} THEN ${poolId} ELSE first_approval_pool_id END,
        approval_labels = approval_labels || ${JSON.stringify(labels)}::jsonb
       WHERE id = ANY(${ids}::text[]) AND ${visible} AND state = 'pending' AND expires_at > compute_now()
         AND ${guard} AND ${secondApprovalGuard(actor, poolId)}
      RETURNING *
    ), published AS (
      INSERT INTO events (tenant_id, type, data)
      SELECT tenant_id, CASE WHEN state = 'approved' THEN 'security.join-request.approved' ELSE 'node.join-request.approval-recorded' END,
             CASE WHEN state = 'approved'
               THEN jsonb_build_object('requestId', id, 'siteId', site_id, 'poolId', pool_id, 'attestor', attestor, 'decidedBy', decided_by, 'reason', reason, 'firstApprovedBy', first_approved_by)
               ELSE jsonb_build_object('requestId', id, 'siteId', site_id, 'poolId', first_approval_pool_id, 'attestor', attestor, 'approvedBy', first_approved_by, 'approvals', 1, 'requiredApprovals', 2)
             END
        FROM decided
      RETURNING 1
    ), audited AS (
      INSERT INTO audit_log (tenant_id, actor, action, resource, data)
      SELECT tenant_id, ${actor}, CASE WHEN state = 'approved' THEN 'join-request.approved' ELSE 'join-request.approval-recorded' END, 'compute-join-request/' || id,
             CASE WHEN state = 'approved'
               THEN jsonb_build_object('poolId', pool_id, 'siteId', site_id, 'reason', reason, 'expiresAt', expires_at, 'csrSha256', csr_sha256, 'firstApprovedBy', first_approved_by, 'labels', approval_labels)
               ELSE jsonb_build_object('poolId', first_approval_pool_id, 'siteId', site_id, 'csrSha256', csr_sha256, 'approvals', 1, 'requiredApprovals', 2, 'labels', approval_labels)
             END
        FROM decided
      RETURNING 1
    ), notified AS (
      SELECT pg_notify(${JOIN_REQUESTS_CHANNEL}, json_build_object('tenantId', tenant_id, 'siteId', site_id, 'requestIds', json_agg(id))::text)
        FROM decided GROUP BY tenant_id, site_id
    )
    SELECT ${RECORD_COLUMNS}, (SELECT count(*) FROM notified) AS notified FROM decided`;
}

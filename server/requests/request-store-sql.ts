import type { RuleInForce } from '../rules/match';

// The queue's store: the statements that read and write join requests inside a join's admission transaction
// (recording, refreshing and expiring requests, the approval rules and expected machines that decide them),
// its NOTIFY channel and its event limit. The attestors that defer (discovery, tpm) call them.

/** The pool columns a row joins in (`LEFT JOIN pools p`): all null when the row names no pool. */
export interface PoolColumns {
  pool_id: string | null;
  p_agent: string;
  p_owner: string;
  p_site: string;
  p_archived: boolean;
  p_policy: { joinAttestors?: string[] } | null;
  p_checks: boolean;
}

/** A row of {@link SELECT_LATEST_REQUESTS}. */
export interface LatestRequestRow extends PoolColumns {
  id: string;
  machine_key: string;
  state: string;
  csr_sha256: string;
  token_id: string | null;
  is_expired: boolean;
  approval_labels: Record<string, string>;
}

/** A row of {@link SELECT_SITE_RULES}. */
export interface SiteRuleRow extends PoolColumns {
  id: string;
  site_id: string;
  name: string;
  match: unknown;
  action: RuleInForce['action'];
  max_admissions: number | null;
  admissions: number;
  labels: Record<string, string>;
}

/** A row of {@link SELECT_EXPECTED_MACHINES}. */
export interface ExpectedMachineRow extends PoolColumns {
  id: string;
  site_id: string;
  import_id: string;
  serial: string | null;
  product_uuid: string | null;
  mac: string | null;
  pool_id: string;
  labels: Record<string, string>;
}

/** The channel every change of a join-request queue is announced on (payload: tenant, site, request ids). */
export const JOIN_REQUESTS_CHANNEL = 'compute_join_requests';

// The site queues a discovery batch reads under (LOCK_SITE_QUEUES) are locked by the join core before the
// attestor's load: ../join/request-admission-sql.ts.

/**
 * Each machine's latest request, locked (machine keys in sorted order, so concurrent batches cannot
 * deadlock), with its expiry read at the database's clock and the approved pool's rules.
 */
export const SELECT_LATEST_REQUESTS = `
SELECT r.id, r.machine_key, r.state, r.csr_sha256, r.token_id, r.pool_id, r.expires_at <= compute_now() AS is_expired, r.approval_labels,
       p.agent AS p_agent, p.owner_tenant_id AS p_owner, p.site_id AS p_site, p.archived_at IS NOT NULL AS p_archived,
       p.policy AS p_policy, cardinality(p.acceptance_checks) > 0 AS p_checks
  FROM unnest($1::text[]) AS k(machine_key)
  CROSS JOIN LATERAL (
    SELECT * FROM join_requests j WHERE j.machine_key = k.machine_key ORDER BY j.created_at DESC, j.id DESC LIMIT 1 FOR UPDATE
  ) r
  LEFT JOIN pools p ON p.id = r.pool_id
 ORDER BY r.machine_key`;

/** Pending or approved requests a newer attempt replaces: they read as `expired` from now on. */
export const EXPIRE_REQUESTS = `UPDATE join_requests SET state = 'expired' WHERE id = ANY($1::text[]) AND state IN ('pending', 'approved')`;

/** `node.join-request.created` events: at most this many per tenant and site per window (rate_limit_hit). */
export const CREATED_EVENT_LIMIT = { limit: 60, window: '60 seconds', keyPrefix: 'join-request-created' } as const;

/**
 * Records new pending requests and refreshes existing ones (same id: new CSR hash, claims and their key's
 * trust, ip, boot lease epoch and token, expiry restarted; a new CSR drops a recorded first approval), publishes `node.join-request.created` for the new ones (through the
 * shared rate limit, per tenant and site, each event carrying the number `suppressed` before it), marks the
 * approvals the batch's admissions used as consumed (naming the node each admitted), and announces every change with NOTIFY, all in the
 * admission transaction.
 */
export const WRITE_REQUESTS_SQL = `
WITH recorded AS (
  INSERT INTO join_requests (id, tenant_id, site_id, attestor, state, machine_key, claims, hardware_key, mac, ip, workflow_id,
                             vouched_by, boot_lease_epoch, csr_sha256, token_id, hardware_key_trusted, expires_at, created_at, client_address)
  SELECT id, tenant, site, 'discovery', 'pending', mk, claims, hk, mac, ip, wf, vb, epoch, csr, tok, hkt,
         compute_now() + ttl * interval '1 second', date_trunc('milliseconds', compute_now()), caddr
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::bytea[], $7::text[], $8::text[], $9::text[],
                $10::text[], $11::bigint[], $12::text[], $13::text[], $14::int[], $19::bool[], $21::text[])
      AS x(id, tenant, site, mk, claims, hk, mac, ip, wf, vb, epoch, csr, tok, ttl, hkt, caddr)
  ON CONFLICT (id) DO UPDATE
     SET claims = EXCLUDED.claims, hardware_key = EXCLUDED.hardware_key, ip = EXCLUDED.ip, workflow_id = EXCLUDED.workflow_id,
         client_address = EXCLUDED.client_address,
         vouched_by = EXCLUDED.vouched_by, boot_lease_epoch = EXCLUDED.boot_lease_epoch, csr_sha256 = EXCLUDED.csr_sha256,
         token_id = EXCLUDED.token_id, hardware_key_trusted = EXCLUDED.hardware_key_trusted, expires_at = EXCLUDED.expires_at,
         -- A first approval (two-person sites) was given for the CSR then on the request: a new CSR drops it.
         first_approved_by = CASE WHEN join_requests.csr_sha256 = EXCLUDED.csr_sha256 THEN join_requests.first_approved_by END,
         first_approved_at = CASE WHEN join_requests.csr_sha256 = EXCLUDED.csr_sha256 THEN join_requests.first_approved_at END,
         first_approval_pool_id = CASE WHEN join_requests.csr_sha256 = EXCLUDED.csr_sha256 THEN join_requests.first_approval_pool_id END,
         approval_labels = CASE WHEN join_requests.csr_sha256 = EXCLUDED.csr_sha256 THEN join_requests.approval_labels ELSE '{}'::jsonb END
   WHERE join_requests.state = 'pending'
  RETURNING id, tenant_id, site_id, (xmax = 0) AS is_new
), consumed AS (
  UPDATE join_requests j SET state = 'consumed', consumed_at = compute_now(), node_id = c.node
    FROM unnest($15::text[], $20::text[]) AS c(id, node)
   WHERE j.id = c.id AND j.state = 'approved'
  RETURNING j.id, j.tenant_id, j.site_id
), created_events AS (
  INSERT INTO events (tenant_id, type, data)
  SELECT r.tenant_id, 'node.join-request.created',
         jsonb_build_object('requestId', r.id, 'siteId', r.site_id, 'attestor', 'discovery', 'suppressed', h.suppressed)
    FROM (SELECT * FROM recorded WHERE is_new ORDER BY id) r
   CROSS JOIN LATERAL rate_limit_hit($16::text || ':' || r.tenant_id || ':' || r.site_id, $17::int, $18::interval) h
   WHERE h.allowed
  RETURNING 1
), changes AS (
  SELECT tenant_id, site_id, id FROM recorded UNION ALL SELECT tenant_id, site_id, id FROM consumed
)
SELECT pg_notify('${JOIN_REQUESTS_CHANNEL}', json_build_object('tenantId', tenant_id, 'siteId', site_id, 'requestIds', json_agg(id))::text)
  FROM changes GROUP BY tenant_id, site_id`;

/**
 * The batch's sites' approval rules in force (enabled, not past `valid_until`), in each site's order, with their pools' rules (read under
 * LOCK_SITE_QUEUES, so `admissions` counts every earlier admission by the rule on any instance). One
 * statement per batch, whatever the number of machines.
 */
export const SELECT_SITE_RULES = `
SELECT r.id, r.site_id, r.name, r.match, r.action, r.pool_id, r.max_admissions, r.admissions, r.labels,
       p.agent AS p_agent, p.owner_tenant_id AS p_owner, p.site_id AS p_site, p.archived_at IS NOT NULL AS p_archived,
       p.policy AS p_policy, cardinality(p.acceptance_checks) > 0 AS p_checks
  FROM approval_rules r LEFT JOIN pools p ON p.id = r.pool_id
 WHERE r.site_id = ANY($1::text[]) AND r.enabled AND (r.valid_until IS NULL OR r.valid_until > compute_now())
 ORDER BY r.site_id, r.position, r.id`;

/**
 * The batch's sites' expected machines (imports) that have not arrived, matching a join's vouched MAC or,
 * for a join whose hardware key is trusted, its serial or product UUID; oldest entry first. Read under
 * LOCK_SITE_QUEUES, so one entry admits one machine across instances.
 */
export const SELECT_EXPECTED_MACHINES = `
SELECT e.id, e.site_id, e.import_id, e.serial, e.product_uuid, e.mac, e.pool_id, e.labels,
       p.agent AS p_agent, p.owner_tenant_id AS p_owner, p.site_id AS p_site, p.archived_at IS NOT NULL AS p_archived,
       p.policy AS p_policy, cardinality(p.acceptance_checks) > 0 AS p_checks
  FROM expected_machines e LEFT JOIN pools p ON p.id = e.pool_id
 WHERE e.site_id = ANY($1::text[]) AND e.arrived_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > compute_now())
   AND (e.mac = ANY($2::text[]) OR e.serial = ANY($3::text[]) OR e.product_uuid = ANY($4::text[]))
 ORDER BY e.created_at, e.id`;

/**
 * Requests decided in the join transaction by a rule or an expected machine: recorded (or, for the lease's
 * live request, updated) as `consumed` by the admission, naming its node, or as `rejected`; `decided_by`
 * `rule:<id>` or `import:<id>` with the rule's name or the entry as the reason; the rules' admissions counted
 * and the entries marked arrived; `security.join-request.approved` or `.rejected` published; audited with the
 * decider as the actor; and announced with NOTIFY.
 */
export const WRITE_RULE_DECISIONS_SQL = `
WITH decided AS (
  INSERT INTO join_requests (id, tenant_id, site_id, attestor, state, machine_key, claims, hardware_key, hardware_key_trusted, mac, ip, workflow_id,
                             vouched_by, boot_lease_epoch, csr_sha256, token_id, expires_at, created_at, decided_at, decided_by, reason,
                             pool_id, consumed_at, node_id, client_address)
  SELECT id, tenant, site, 'discovery', st, mk, claims, hk, hkt, mac, ip, wf, vb, epoch, csr, tok,
         compute_now() + ttl * interval '1 second', date_trunc('milliseconds', compute_now()), compute_now(), dby, rsn,
         pool, CASE WHEN st = 'consumed' THEN compute_now() END, node, caddr
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::bytea[], $7::bool[], $8::text[], $9::text[], $10::text[],
                $11::text[], $12::bigint[], $13::text[], $14::text[], $15::int[], $16::text[], $17::text[], $18::text[], $19::text[], $20::text[], $21::text[],
                $23::text[])
      AS x(id, tenant, site, mk, claims, hk, hkt, mac, ip, wf, vb, epoch, csr, tok, ttl, st, rule, dby, rsn, pool, node, caddr)
  ON CONFLICT (id) DO UPDATE
     SET state = EXCLUDED.state, claims = EXCLUDED.claims, hardware_key = EXCLUDED.hardware_key, hardware_key_trusted = EXCLUDED.hardware_key_trusted,
         client_address = EXCLUDED.client_address,
         ip = EXCLUDED.ip, csr_sha256 = EXCLUDED.csr_sha256, token_id = EXCLUDED.token_id, decided_at = EXCLUDED.decided_at,
         decided_by = EXCLUDED.decided_by, reason = EXCLUDED.reason, pool_id = EXCLUDED.pool_id, consumed_at = EXCLUDED.consumed_at,
         node_id = EXCLUDED.node_id
   WHERE join_requests.state = 'pending'
  RETURNING id, tenant_id, site_id, state, pool_id, decided_by, reason
), counted AS (
  UPDATE approval_rules r SET admissions = r.admissions + u.n
    FROM (SELECT rule, count(*)::int AS n FROM unnest($16::text[], $17::text[]) AS y(st, rule) WHERE st = 'consumed' AND rule IS NOT NULL GROUP BY rule) u
   WHERE r.id = u.rule
  RETURNING 1
), arrived AS (
  UPDATE expected_machines e SET arrived_at = compute_now(), request_id = a.id
    FROM unnest($1::text[], $22::text[]) AS a(id, expected)
   WHERE e.id = a.expected
  RETURNING 1
), published AS (
  INSERT INTO events (tenant_id, type, data)
  SELECT tenant_id, CASE WHEN state = 'consumed' THEN 'security.join-request.approved' ELSE 'security.join-request.rejected' END,
         jsonb_build_object('requestId', id, 'siteId', site_id, 'poolId', pool_id, 'attestor', 'discovery', 'decidedBy', decided_by, 'reason', reason)
    FROM decided
  RETURNING 1
), audited AS (
  INSERT INTO audit_log (tenant_id, actor, action, resource, data)
  SELECT tenant_id, decided_by, CASE WHEN state = 'consumed' THEN 'join-request.approved' ELSE 'join-request.rejected' END,
         'compute-join-request/' || id,
         jsonb_build_object('poolId', pool_id, 'siteId', site_id, 'reason', reason, 'rule', CASE WHEN decided_by LIKE 'rule:%' THEN reason END)
    FROM decided
  RETURNING 1
)
SELECT pg_notify('${JOIN_REQUESTS_CHANNEL}', json_build_object('tenantId', tenant_id, 'siteId', site_id, 'requestIds', json_agg(id))::text)
  FROM decided GROUP BY tenant_id, site_id`;

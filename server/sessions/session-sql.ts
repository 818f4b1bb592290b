/**
 * Opens a group of sessions (one per node: the caller never puts two Hellos of one node in a group) under
 * their nodes' row locks, taken by the statement before it in the same transaction, so that this statement
 * reads each certificate's standing after a concurrent revokeIdentity or reclaim. It writes nothing for a
 * Hello whose leaf is no longer live or whose gateway's lease is not. The first session of a node that had
 * none publishes `node.connected`; the first contact of an identity generation, when the node is `adopting`
 * in a pool with acceptance checks, publishes `node.acceptance.started` after it. The node then counts as
 * contacted for its generation, so its renewals publish nothing more (first-contact.ts).
 *
 * A node holds at most $6 sessions: an opened Hello marks the node's sessions beyond the newest $6 − 1 replaced
 * (oldest first), and the gateways that hold them hear it (the `node_sessions_replaced` trigger announces it;
 * their lease call ends them). The node's row lock serializes this between groups and API instances, and this
 * statement's snapshot, taken after the lock, sees every session a concurrent group committed.
 *
 * The node records the trust set version its agent holds after this Hello (`trust_version`, and when): the
 * Hello's own, or the server's when the welcome is followed by a `trust` event.
 *
 * $1 session ids, $2 leaf serials, $3 node ids, $4 gateway ids, $5 agent versions, $7 trust versions (arrays,
 * one entry per Hello), $6 the sessions a node may hold. Answers one row per Hello, in no particular order: its
 * session id, whether it opened, whether its gateway's lease is live, and whether acceptance work may be due
 * (the node is adopting, or has a pending run: the only cases in which DELIVER_RUN_ON_HELLO or SUPERSEDE_OLD_RUNS
 * change anything, so a Hello runs them only then).
 */
export const OPEN_SESSIONS = `
WITH hello AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $7::int[])
             AS h(session_id, serial, node_id, gateway_id, agent_version, trust_version)
), live_gateway AS (
  SELECT g.gateway_id FROM gateway_leases g WHERE g.gateway_id IN (SELECT gateway_id FROM hello) AND g.expires_at > compute_now()
), node AS (
  SELECT h.session_id, h.serial, h.gateway_id, h.agent_version, h.trust_version,
         n.id, n.tenant_id, n.site_id, n.pool_id, n.state, n.identity_generation, n.connected_since, n.connected_generation,
         COALESCE(p.acceptance_checks, '{}') AS checks
    FROM hello h
    JOIN nodes n ON n.id = h.node_id
    JOIN node_certs c ON c.node_id = n.id AND c.serial = h.serial
    LEFT JOIN pools p ON p.id = n.pool_id
   WHERE c.revoked_at IS NULL AND c.not_after > compute_now()
     AND c.identity_generation = n.identity_generation AND n.state <> 'retired'
     AND h.gateway_id IN (SELECT gateway_id FROM live_gateway)
), ranked AS (
  SELECT o.id, row_number() OVER (PARTITION BY o.node_id ORDER BY o.opened_at DESC, o.id DESC) AS newer
    FROM node_sessions o
   WHERE o.node_id IN (SELECT id FROM node) AND o.replaced_at IS NULL
), replaced AS (
  -- A session row locked now is being deleted (a lease call or the sweep ending it, which then waits for this
  -- node's lock): skipped, since it is ending anyway, rather than waited for, which would deadlock.
  UPDATE node_sessions s SET replaced_at = compute_now()
   WHERE s.id IN (SELECT l.id FROM node_sessions l WHERE l.id IN (SELECT id FROM ranked WHERE newer >= $6::int) FOR UPDATE SKIP LOCKED)
  RETURNING s.id
), opened AS (
  INSERT INTO node_sessions (id, node_id, cert_serial, gateway_id, agent_version, opened_at, trust_version)
  SELECT session_id, id, serial, gateway_id, agent_version, compute_now(), trust_version FROM node
  RETURNING id
), marked AS (
  UPDATE nodes n SET connected_since = COALESCE(n.connected_since, compute_now()), session_ended_at = NULL,
         connected_generation = n.identity_generation, trust_version = node.trust_version, trust_version_at = compute_now()
    FROM node WHERE n.id = node.id
  RETURNING n.id
), published AS (
  INSERT INTO events (tenant_id, type, data)
  SELECT node.tenant_id, e.type, e.data
    FROM node CROSS JOIN LATERAL (VALUES
      (1, 'node.connected',
       jsonb_build_object('nodeId', node.id, 'poolId', node.pool_id, 'siteId', node.site_id, 'identityGeneration', node.identity_generation,
                          'sessionId', node.session_id, 'gatewayId', node.gateway_id)),
      (2, 'node.acceptance.started',
       jsonb_build_object('nodeId', node.id, 'poolId', node.pool_id, 'checks', to_jsonb(node.checks), 'identityGeneration', node.identity_generation))
    ) AS e(ord, type, data)
   WHERE (e.ord = 1 AND node.connected_since IS NULL)
      OR (e.ord = 2 AND node.connected_generation < node.identity_generation AND node.state = 'adopting' AND cardinality(node.checks) > 0)
   ORDER BY node.id, e.ord
  RETURNING type
)
SELECT h.session_id, h.session_id IN (SELECT id FROM opened) AS opened,
       h.gateway_id IN (SELECT gateway_id FROM live_gateway) AS gateway_live,
       (SELECT count(*) FROM marked)::int AS marked, (SELECT count(*) FROM published)::int AS published,
       (SELECT count(*) FROM replaced)::int AS replaced,
       h.session_id IN (SELECT node.session_id FROM node
                         WHERE node.state = 'adopting'
                            OR EXISTS (SELECT 1 FROM node_acceptance_runs r WHERE r.node_id = node.id AND r.state = 'pending'))
         AS acceptance_due
  FROM hello h`;

/**
 * The sessions at gateway $1 whose agent holds an older trust set than the server's ($2): at most $3 of them
 * are marked as holding $2 (a session row another transaction holds locked is skipped rather than waited for:
 * the next call finds it) and come back, to carry the `trust` event in this lease answer, so each session
 * hears a change once. Their nodes record $2 as the version they hold (their rows locked in id order, as a
 * Hello's group takes them, so the two never deadlock). The index on (gateway_id, trust_version) keeps this
 * to an empty range once every session caught up.
 */
export const DELIVER_TRUST = `
WITH due AS (
  SELECT s.id FROM node_sessions s
   WHERE s.gateway_id = $1 AND s.trust_version < $2::int AND s.replaced_at IS NULL
   LIMIT $3::int
     FOR NO KEY UPDATE SKIP LOCKED
), sent AS (
  UPDATE node_sessions s SET trust_version = $2::int FROM due WHERE s.id = due.id
  RETURNING s.id, s.node_id
), locked AS (
  SELECT n.id FROM nodes n
   WHERE n.id IN (SELECT node_id FROM sent) AND COALESCE(n.trust_version, 0) < $2::int
   ORDER BY n.id
     FOR NO KEY UPDATE
), held AS (
  UPDATE nodes n SET trust_version = $2::int, trust_version_at = compute_now()
   WHERE n.id IN (SELECT id FROM locked)
  RETURNING n.id
)
SELECT id AS session_id, node_id FROM sent`;

/**
 * A gateway's lease: inserted by its first call, extended by every later one while it is live. An expired
 * lease is not extended (no row comes back): its sessions were or will be ended by the sweep, and the gateway
 * must start over. $1 gateway id, $2 lifetime.
 */
export const RENEW_LEASE = `
INSERT INTO gateway_leases (gateway_id, started_at, heartbeat_at, expires_at)
VALUES ($1, compute_now(), compute_now(), compute_now() + $2::interval)
ON CONFLICT (gateway_id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at, expires_at = EXCLUDED.expires_at
 WHERE gateway_leases.expires_at > compute_now()
RETURNING 1`;

/**
 * Sessions that ended: those the gateway reports closed, those whose certificate stopped being valid
 * (revoked, expired, superseded by a reclaim) or whose node was retired, and those a newer session of their node
 * replaced. Each is deleted and its node records when its last session ended. Answers the ids the gateway must
 * end (`invalid`), and of those the replaced ones (`replaced`). $1 gateway id, $2 closed ids.
 */
export const END_SESSIONS = `
WITH invalid AS (
  SELECT s.id, s.replaced_at IS NOT NULL AS replaced FROM node_sessions s
    JOIN nodes n ON n.id = s.node_id
    LEFT JOIN node_certs c ON c.serial = s.cert_serial
   WHERE s.gateway_id = $1
     AND (c.serial IS NULL OR c.revoked_at IS NOT NULL OR c.not_after <= compute_now()
          OR c.identity_generation <> n.identity_generation OR n.state = 'retired' OR s.replaced_at IS NOT NULL)
), gone AS (
  DELETE FROM node_sessions s
   WHERE s.gateway_id = $1 AND (s.id = ANY($2::text[]) OR s.id IN (SELECT id FROM invalid))
  RETURNING s.id, s.node_id
), ended AS (
  UPDATE nodes n SET session_ended_at = compute_now()
   WHERE n.id IN (SELECT node_id FROM gone)
  RETURNING n.id
)
SELECT g.id, g.id IN (SELECT id FROM invalid) AS invalid, g.id IN (SELECT id FROM invalid WHERE replaced) AS replaced,
       (SELECT count(*) FROM ended)::int AS nodes
  FROM gone g`;

/**
 * The sessions of gateways whose lease expired end at the gateway's last heartbeat (the last moment anyone
 * knew they were up).
 */
export const END_DEAD_GATEWAY_SESSIONS = `
WITH dead AS (
  DELETE FROM node_sessions s USING gateway_leases g
   WHERE g.gateway_id = s.gateway_id AND g.expires_at <= compute_now()
  RETURNING s.node_id, g.heartbeat_at
)
UPDATE nodes n SET session_ended_at = GREATEST(n.session_ended_at, d.ended_at)
  FROM (SELECT node_id, max(heartbeat_at) AS ended_at FROM dead GROUP BY node_id) d
 WHERE n.id = d.node_id`;

/**
 * Nodes whose last session ended more than the grace period ago and did not come back publish
 * `node.disconnected` once, and are no longer connected. Concurrent sweeps of several instances publish it
 * once: the second re-checks `connected_since` on the row the first updated. $1 grace.
 */
export const PUBLISH_DISCONNECTED = `
WITH gone AS (
  UPDATE nodes n SET connected_since = NULL
   WHERE n.connected_since IS NOT NULL AND n.session_ended_at IS NOT NULL
     AND n.session_ended_at <= compute_now() - $1::interval
     AND NOT EXISTS (SELECT 1 FROM node_sessions s WHERE s.node_id = n.id)
  RETURNING n.id, n.tenant_id, n.pool_id, n.site_id, n.session_ended_at
)
INSERT INTO events (tenant_id, type, data)
SELECT tenant_id, 'node.disconnected',
       jsonb_build_object('nodeId', id, 'poolId', pool_id, 'siteId', site_id,
                          'lastSeenAt', to_char(session_ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
  FROM gone ORDER BY id
RETURNING 1`;

/** Expired gateway leases with no session left, an hour after they expired. */
export const PRUNE_LEASES = `
DELETE FROM gateway_leases g WHERE g.expires_at <= compute_now() - interval '1 hour'
   AND NOT EXISTS (SELECT 1 FROM node_sessions s WHERE s.gateway_id = g.gateway_id)`;

/**
 * The run a Hello delivers: the node's pending run (again, to this session), or, when the node is `adopting`
 * in a pool with built-in checks and its identity generation has no run yet (its first contact), a new
 * pending run. A failed run is not started again by a reconnect: an operator fixes the cause and calls
 * nodes.recheck. Runs after the Hello's commit; the unique pending index makes two Hellos agree on one run.
 * $1 new run id, $2 node id, $3 session id.
 */
export const DELIVER_RUN_ON_HELLO = `
WITH node AS (
  SELECT n.id, n.identity_generation, p.policy->'acceptance' AS checks
    FROM nodes n JOIN pools p ON p.id = n.pool_id
   WHERE n.id = $2 AND n.state = 'adopting'
     AND jsonb_typeof(p.policy->'acceptance') = 'array' AND jsonb_array_length(p.policy->'acceptance') > 0
), started AS (
  INSERT INTO node_acceptance_runs (id, node_id, identity_generation, checks, state, delivered_session_id, started_at)
  SELECT $1, node.id, node.identity_generation, node.checks, 'pending', $3, compute_now() FROM node
   WHERE NOT EXISTS (SELECT 1 FROM node_acceptance_runs r WHERE r.node_id = node.id AND r.identity_generation = node.identity_generation)
  ON CONFLICT DO NOTHING
  RETURNING id, checks
), resent AS (
  UPDATE node_acceptance_runs r SET delivered_session_id = $3
    FROM node WHERE r.node_id = node.id AND r.state = 'pending' AND r.identity_generation = node.identity_generation
  RETURNING r.id, r.checks
)
SELECT id, checks FROM started UNION ALL SELECT id, checks FROM resent`;

/**
 * A pending run of an older identity generation (the machine was reclaimed meanwhile) is superseded, so the
 * new generation's first Hello can start its own run (one pending run per node). $1 node id.
 */
export const SUPERSEDE_OLD_RUNS = `
UPDATE node_acceptance_runs r SET state = 'failed', finished_at = compute_now(),
       results = '[{"check":"identity","passed":false,"message":"superseded by a newer identity generation"}]'
  FROM nodes n
 WHERE n.id = $1 AND r.node_id = n.id AND r.state = 'pending' AND r.identity_generation < n.identity_generation`;

/** Pending runs of nodes whose session this gateway holds and that this session has not been asked yet. */
export const DELIVER_RUNS_TO_GATEWAY = `
UPDATE node_acceptance_runs r SET delivered_session_id = s.id
  FROM node_sessions s
 WHERE s.node_id = r.node_id AND s.gateway_id = $1 AND r.state = 'pending'
   AND r.delivered_session_id IS DISTINCT FROM s.id
RETURNING r.id, r.checks, s.id AS session_id`;

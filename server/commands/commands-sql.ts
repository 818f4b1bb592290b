/**
 * The statements of commands (protocol.md "Commands"), shared by every API instance: a command moves
 * queued → sent → succeeded | failed | rejected, or ends expired; each move is one statement that re-checks the
 * state it moves from, so it happens once whatever the number of instances and gateways.
 */

/** Open commands (queued or sent) a node may hold at once: the per-node cap of an enqueue. */
export const MAX_OPEN_COMMANDS_PER_NODE = 16;

/**
 * The due commands of the sessions at gateway $1, at most $2: each queued command (oldest first) of a node
 * with a session there, before its delivery deadline, is marked `sent` to that session (the node's newest one
 * at the gateway), with the gateway and the session's certificate, in this statement. A command row another
 * transaction holds is skipped (it is being sent by another instance, or enqueued), and the lock re-reads the
 * state, so a command is sent at most once even when two gateways hold sessions of its node. Answers what the
 * signed body needs.
 */
export const DELIVER_COMMANDS = `
WITH due AS (
  SELECT c.id, s.id AS session_id, s.cert_serial
    FROM node_commands c
   CROSS JOIN LATERAL (SELECT s.id, s.cert_serial FROM node_sessions s
                        WHERE s.node_id = c.node_id AND s.gateway_id = $1 AND s.replaced_at IS NULL
                        ORDER BY s.opened_at DESC, s.id DESC LIMIT 1) s
   WHERE c.state = 'queued' AND c.not_after > compute_now()
     AND c.node_id IN (SELECT g.node_id FROM node_sessions g WHERE g.gateway_id = $1)
   ORDER BY c.created_at, c.id
   LIMIT $2::int
     FOR UPDATE OF c SKIP LOCKED
)
UPDATE node_commands c
   SET state = 'sent', sent_at = compute_now(), session_id = due.session_id, gateway_id = $1, cert_serial = due.cert_serial
  FROM due
 WHERE c.id = due.id AND c.state = 'queued'
RETURNING c.id, c.node_id, c.kind, c.args, floor(extract(epoch FROM c.not_after))::bigint AS not_after, c.session_id`;

/**
 * Commands gateway $1 dropped (their kind is not one the session's certificate allows): each one sent through
 * that gateway and still `sent` ends `rejected` and publishes `security.command.refused`. $2 command ids.
 */
export const REFUSE_COMMANDS = `
WITH refused AS (
  UPDATE node_commands c SET state = 'rejected', reason = 'kind-not-allowed', finished_at = compute_now()
   WHERE c.id = ANY($2::text[]) AND c.gateway_id = $1 AND c.state = 'sent'
  RETURNING c.id, c.tenant_id, c.node_id, c.kind, c.session_id, c.cert_serial
), published AS (
  INSERT INTO events (tenant_id, type, data)
  SELECT r.tenant_id, 'security.command.refused',
         jsonb_build_object('commandId', r.id, 'nodeId', r.node_id, 'kind', r.kind, 'reason', 'kind-not-allowed',
                            'sessionId', r.session_id, 'gatewayId', $1::text, 'certificateSerial', r.cert_serial)
    FROM refused r ORDER BY r.id
  RETURNING 1
)
SELECT (SELECT count(*) FROM refused)::int AS refused, (SELECT count(*) FROM published)::int AS published`;

/**
 * A node's result for command $1, believed only from the certificate it was sent to ($2, its serial), while the
 * command is `sent` and within its time limit: stores $3 (succeeded, failed, rejected) and $4 (the output),
 * and publishes `node.command.finished`. No row: refused (a second result, another certificate, too late).
 */
export const RECORD_RESULT = `
WITH done AS (
  UPDATE node_commands c SET state = $3, output = $4::jsonb, finished_at = compute_now()
   WHERE c.id = $1 AND c.cert_serial = $2 AND c.state = 'sent'
     AND c.sent_at + make_interval(secs => c.time_limit_seconds) > compute_now()
  RETURNING c.id, c.tenant_id, c.node_id, c.kind, c.state, c.batch_id
), published AS (
  INSERT INTO events (tenant_id, type, data)
  SELECT d.tenant_id, 'node.command.finished',
         jsonb_build_object('commandId', d.id, 'nodeId', d.node_id, 'kind', d.kind, 'state', d.state, 'batchId', d.batch_id)
    FROM done d
  RETURNING 1
)
SELECT d.id FROM done d`;

/**
 * At most $1 commands that ran out of time end `expired`: queued past their delivery deadline
 * (`not-delivered`), or sent and not answered within their time limit (`not-answered`). Rows another instance
 * holds are skipped, so every instance may run it. Publishes `node.command.finished` for each.
 */
export const EXPIRE_COMMANDS = `
WITH gone AS (
  SELECT c.id FROM node_commands c
   WHERE c.state IN ('queued', 'sent')
     AND ((c.state = 'queued' AND c.not_after <= compute_now())
          OR (c.state = 'sent' AND c.sent_at + make_interval(secs => c.time_limit_seconds) <= compute_now()))
   LIMIT $1::int
     FOR UPDATE SKIP LOCKED
), expired AS (
  UPDATE node_commands c
     SET state = 'expired', finished_at = compute_now(),
         reason = CASE WHEN c.state = 'queued' THEN 'not-delivered' ELSE 'not-answered' END
    FROM gone
   WHERE c.id = gone.id AND c.state IN ('queued', 'sent')
  RETURNING c.id, c.tenant_id, c.node_id, c.kind, c.batch_id, c.reason
), published AS (
  INSERT INTO events (tenant_id, type, data)
  SELECT e.tenant_id, 'node.command.finished',
         jsonb_build_object('commandId', e.id, 'nodeId', e.node_id, 'kind', e.kind, 'state', 'expired', 'reason', e.reason,
                            'batchId', e.batch_id)
    FROM expired e ORDER BY e.id
  RETURNING 1
)
SELECT (SELECT count(*) FROM expired)::int AS expired, (SELECT count(*) FROM published)::int AS published`;

/**
 * The nodes of an enqueue ($1 ids, of tenant $2), locked in id order (the order every enqueue and bulk action
 * takes them, so none deadlock), with the allowed kinds of their current certificate (the newest live one of
 * the node's generation: unrevoked and unexpired; null when the node has none, or its attestor set none), whether
 * it has one (a node whose certificates all expired could not take the command), and their open commands.
 */
export const LOCK_TARGETS = `
SELECT n.id, n.state,
       (SELECT c.allowed_kinds FROM node_certs c
         WHERE c.node_id = n.id AND c.identity_generation = n.identity_generation AND c.revoked_at IS NULL
           AND c.not_after > compute_now()
         ORDER BY c.not_after DESC LIMIT 1) AS allowed_kinds,
       EXISTS (SELECT 1 FROM node_certs c
                WHERE c.node_id = n.id AND c.identity_generation = n.identity_generation AND c.revoked_at IS NULL
                  AND c.not_after > compute_now()) AS has_cert,
       (SELECT count(*) FROM node_commands o WHERE o.node_id = n.id AND o.state IN ('queued', 'sent'))::int AS open
  FROM nodes n
 WHERE n.id = ANY($1::text[]) AND n.tenant_id = $2
 ORDER BY n.id
   FOR UPDATE OF n`;

/**
 * Inserts commands ($1 ids, $2 node ids, $3 states: queued or rejected, $4 reasons) of tenant $5, kind $6, args
 * $7, by $8, delivery deadline $9 (Unix seconds), time limit $10, batch $11; with one `node.command.enqueued`
 * event and one audit row each. The insert's trigger announces the queued ones to the gateways holding their
 * nodes' sessions.
 */
export const INSERT_COMMANDS = `
WITH x AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS x(id, node_id, state, reason)
), inserted AS (
  INSERT INTO node_commands (id, tenant_id, node_id, kind, args, state, reason, created_by, not_after, time_limit_seconds,
                             batch_id, finished_at)
  SELECT x.id, $5, x.node_id, $6, $7::jsonb, x.state, x.reason, $8, to_timestamp($9::bigint), $10::int, $11,
         CASE WHEN x.state = 'queued' THEN NULL ELSE compute_now() END
    FROM x
  RETURNING id, node_id, state, reason
), data AS (
  SELECT i.*, jsonb_build_object('commandId', i.id, 'nodeId', i.node_id, 'kind', $6::text, 'state', i.state,
                                 'reason', i.reason, 'batchId', $11::text, 'notAfter', $9::bigint) AS data
    FROM inserted i
), published AS (
  INSERT INTO events (tenant_id, type, data) SELECT $5, 'node.command.enqueued', d.data FROM data d ORDER BY d.id RETURNING 1
), audited AS (
  INSERT INTO audit_log (tenant_id, actor, action, resource, data)
  SELECT $5, $8, 'node.command.enqueued', 'compute-node/' || d.node_id, d.data FROM data d ORDER BY d.id RETURNING 1
)
SELECT (SELECT count(*) FROM inserted)::int AS inserted, (SELECT count(*) FROM published)::int AS published,
       (SELECT count(*) FROM audited)::int AS audited`;

-- Commands (protocol.md "Commands"): what the control plane asks a connected node to do, delivered as a signed
-- `command` event on one of the node's sessions by the gateway that holds it, and answered on that session's
-- connection. Shared by every API instance and gateway.

-- The kinds a certificate allows (exact kinds or `prefix.*`), set by its attestor and copied by renewals;
-- null: no restriction, an empty array: none.
ALTER TABLE "node_certs" ADD COLUMN "allowed_kinds" TEXT[];

-- One enqueue to many nodes (a pool or a node filter): its progress is its commands' counts by state.
CREATE TABLE "command_batches" (
  "id" TEXT PRIMARY KEY,
  "tenant_id" TEXT NOT NULL REFERENCES "tenants" ("id") ON DELETE CASCADE,
  "kind" TEXT NOT NULL,
  "selector" JSONB NOT NULL,
  "total" INTEGER NOT NULL,
  "created_by" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT compute_now()
);
CREATE INDEX "command_batches_tenant_idx" ON "command_batches" ("tenant_id", "created_at");

CREATE TABLE "node_commands" (
  "id" TEXT PRIMARY KEY,
  "tenant_id" TEXT NOT NULL REFERENCES "tenants" ("id") ON DELETE CASCADE,
  "node_id" TEXT NOT NULL REFERENCES "nodes" ("id") ON DELETE CASCADE,
  "kind" TEXT NOT NULL,
  "args" JSONB NOT NULL DEFAULT '{}',
  "state" TEXT NOT NULL DEFAULT 'queued'
    CHECK ("state" IN ('queued', 'sent', 'succeeded', 'failed', 'rejected', 'expired')),
  "created_by" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT compute_now(),
  -- The delivery deadline: a command still queued then ends `expired` (and the agent runs nothing after it).
  "not_after" TIMESTAMPTZ(6) NOT NULL,
  -- How long the node has to answer once it was sent.
  "time_limit_seconds" INTEGER NOT NULL,
  "sent_at" TIMESTAMPTZ(6),
  -- Where it was sent: the session, its gateway and the certificate the session was opened with (a result is
  -- believed only from that certificate).
  "session_id" TEXT,
  "gateway_id" TEXT,
  "cert_serial" TEXT,
  "finished_at" TIMESTAMPTZ(6),
  "output" JSONB,
  -- Why it ended rejected or expired when the agent did not say (`kind-not-allowed`, `not-delivered`, …).
  "reason" TEXT,
  "batch_id" TEXT REFERENCES "command_batches" ("id") ON DELETE SET NULL
);
-- The node page's list, newest first.
CREATE INDEX "node_commands_node_idx" ON "node_commands" ("node_id", "created_at" DESC, "id" DESC);
-- Queued for the sessions of a gateway: the lease call joins the gateway's sessions to these by node.
CREATE INDEX "node_commands_queued_idx" ON "node_commands" ("node_id", "created_at") WHERE "state" = 'queued';
-- The expiry worker and the per-node cap: commands still open.
CREATE INDEX "node_commands_open_idx" ON "node_commands" ("state", "not_after") WHERE "state" IN ('queued', 'sent');
-- A batch's progress.
CREATE INDEX "node_commands_batch_idx" ON "node_commands" ("batch_id", "state") WHERE "batch_id" IS NOT NULL;

-- A command queued for a node that holds a session is announced on `compute_sessions` to the gateways that
-- hold them, in the enqueuing transaction, so they make a lease call at once (which carries it). One
-- announcement per statement, naming each gateway once.
CREATE FUNCTION compute_node_commands_queued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('compute_sessions', json_build_object('gatewayIds', array_agg(DISTINCT s.gateway_id))::text)
     FROM node_sessions s
    WHERE s.node_id IN (SELECT q.node_id FROM queued q WHERE q.state = 'queued')
   HAVING count(*) > 0;
  RETURN NULL;
END;
$$;

CREATE TRIGGER node_commands_queued
  AFTER INSERT ON node_commands
  REFERENCING NEW TABLE AS queued
  FOR EACH STATEMENT
  EXECUTE FUNCTION compute_node_commands_queued();

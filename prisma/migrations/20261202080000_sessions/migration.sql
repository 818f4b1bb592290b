-- Sessions (protocol.md "Sessions"): which nodes hold a session, through which gateway, since when.
-- Shared by every API instance and gateway. A session is believed only while its gateway's lease is live: a
-- gateway renews its lease every few seconds, so one that dies leaves its sessions counted for at most the
-- lease's lifetime, never for as long as it claimed (leases, not trust).

-- One row per gateway process (a random id per start). `heartbeat_at` is the last time it proved it was alive;
-- the heartbeats it writes to its sessions go out on the same clock, so an open session's last heartbeat is it.
CREATE TABLE "gateway_leases" (
  "gateway_id" TEXT PRIMARY KEY,
  "started_at" TIMESTAMPTZ(6) NOT NULL,
  "heartbeat_at" TIMESTAMPTZ(6) NOT NULL,
  "expires_at" TIMESTAMPTZ(6) NOT NULL
);

-- Open sessions only: a session that ends is deleted, and its node keeps when it ended.
CREATE TABLE "node_sessions" (
  "id" TEXT PRIMARY KEY,
  "node_id" TEXT NOT NULL REFERENCES "nodes" ("id") ON DELETE CASCADE,
  "cert_serial" TEXT NOT NULL,
  "gateway_id" TEXT NOT NULL REFERENCES "gateway_leases" ("gateway_id") ON DELETE CASCADE,
  "agent_version" TEXT NOT NULL,
  "opened_at" TIMESTAMPTZ(6) NOT NULL
);
CREATE INDEX "node_sessions_gateway_id_idx" ON "node_sessions" ("gateway_id");
CREATE INDEX "node_sessions_node_id_idx" ON "node_sessions" ("node_id");

-- `connected_since`: set by the first session of a node that had none (node.connected), cleared when its last
-- session ended and none came back within the grace period (node.disconnected). `session_ended_at`: when its
-- last session ended (null while one is open).
ALTER TABLE "nodes" ADD COLUMN "connected_since" TIMESTAMPTZ(6);
ALTER TABLE "nodes" ADD COLUMN "session_ended_at" TIMESTAMPTZ(6);
CREATE INDEX "nodes_session_ended_at_idx" ON "nodes" ("session_ended_at") WHERE "connected_since" IS NOT NULL;

-- security.session.refused events through the shared rate limit, like record_renew_refusal.
CREATE FUNCTION record_session_refusal(p_tenant text, p_key text, p_data jsonb, p_limit integer, p_window interval)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  hit record;
BEGIN
  SELECT * INTO hit FROM rate_limit_hit(p_key, p_limit, p_window);
  IF hit.allowed THEN
    INSERT INTO events (tenant_id, type, data)
    VALUES (p_tenant, 'security.session.refused', p_data || jsonb_build_object('suppressed', hit.suppressed));
  END IF;
  RETURN hit.allowed;
END $$;

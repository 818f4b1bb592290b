-- Acceptance checks over the session: one row per run of a pool's policy.acceptance on a node. A run is
-- started by the node's first session of an identity generation, or by nodes.recheck; it is delivered to the
-- session that holds the node (`delivered_session_id`), and finished by bcd's report on the same connection.
CREATE TABLE "node_acceptance_runs" (
  "id" TEXT PRIMARY KEY,
  "node_id" TEXT NOT NULL REFERENCES "nodes" ("id") ON DELETE CASCADE,
  "identity_generation" INTEGER NOT NULL,
  "checks" JSONB NOT NULL,
  -- pending, passed, failed
  "state" TEXT NOT NULL,
  -- One entry per check: { check, passed, message }.
  "results" JSONB NOT NULL DEFAULT '[]',
  "delivered_session_id" TEXT,
  "started_at" TIMESTAMPTZ(6) NOT NULL,
  "finished_at" TIMESTAMPTZ(6)
);
CREATE INDEX "node_acceptance_runs_node_id_idx" ON "node_acceptance_runs" ("node_id", "started_at");
-- At most one pending run per node: a recheck while one is pending reuses it.
CREATE UNIQUE INDEX "node_acceptance_runs_pending_idx" ON "node_acceptance_runs" ("node_id") WHERE "state" = 'pending';

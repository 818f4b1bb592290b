-- Whether a request's hardware key is trusted (two independent identifiers), written by the join that records
-- the request, so the queue can filter on it in SQL. NULL for requests recorded before this column: the
-- console derives their trust from the claims as before, and the filter counts them as untrusted until a
-- newer attempt refreshes them (a pending request lives 24 hours by default).
ALTER TABLE "join_requests" ADD COLUMN "hardware_key_trusted" BOOLEAN;

-- The node a consumed approval admitted, written by that join: a request links to its node, and a node to the
-- request that admitted it (the index serves the node side).
ALTER TABLE "join_requests" ADD COLUMN "node_id" TEXT;
CREATE INDEX "join_requests_node" ON "join_requests" ("node_id") WHERE "node_id" IS NOT NULL;

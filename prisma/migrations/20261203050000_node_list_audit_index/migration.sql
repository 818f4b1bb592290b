-- The node list reads, for each node of its page, the audit entry of its join or reclaim
-- (`resource IN (node:…) AND action IN (…) ORDER BY id DESC`, server/nodes/nodes.ts). Without an index on the
-- resource that was a scan of the whole audit log per page: about one entry per node ever joined, so at ten
-- thousand nodes every console list scanned ten thousand rows, and more while a reconnect storm shared the CPU.
CREATE INDEX "audit_log_resource_id_idx" ON "audit_log" ("resource", "id" DESC);

-- Join requests and the discovery attestor (joining.md "Join requests and approvals", protocol.md "Discovery joins").

-- What the site's boot step saw when it minted a discovery token (mac is bound_mac): ip, workflowId,
-- vouchedBy, bootLeaseEpoch. Copied onto the join request the token's machine records.
ALTER TABLE "join_tokens" ADD COLUMN "discovery" JSONB;

-- Per site: { approval: 'unknown-machines' | 'always', pendingTtlSeconds }; absent keys take the defaults.
ALTER TABLE "sites" ADD COLUMN "discovery" JSONB NOT NULL DEFAULT '{}';

-- The token whose machine recorded the request: a rejected request refuses every join with that token.
ALTER TABLE "join_requests" ADD COLUMN "token_id" TEXT;
-- The machine's latest request, read (and locked) by the admission transaction.
CREATE INDEX "join_requests_machine_key_created" ON "join_requests" ("machine_key", "created_at" DESC, "id" DESC);
-- joinRequests.list: a site's requests by state, newest first, paged by (created_at, id).
CREATE INDEX "join_requests_site_state_created" ON "join_requests" ("site_id", "state", "created_at" DESC, "id" DESC);
CREATE INDEX "join_requests_pool_state_created" ON "join_requests" ("pool_id", "state", "created_at" DESC, "id" DESC) WHERE "pool_id" IS NOT NULL;
DROP INDEX "join_requests_site_id_state_idx";

-- A node's permanent MACs in one normal form (12 lower-case hex digits), so that "is this MAC a node of
-- the site" is an index lookup, whatever separators and case the machine sent.
CREATE FUNCTION compute_node_macs(claims JSONB) RETURNS TEXT[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT COALESCE(array_agg(regexp_replace(lower(m), '[^0-9a-f]', '', 'g')), '{}')
          FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(claims->'macs') = 'array' THEN claims->'macs' ELSE '[]'::jsonb END) AS m $$;
CREATE INDEX "nodes_macs" ON "nodes" USING gin (compute_node_macs("claims"));

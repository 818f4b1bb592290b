-- The fleet view's search and filters at 100,000 nodes (server/nodes/node-filter.ts).
--
-- What a node search reads, computed once when the node is written rather than per row and query: the id, the
-- claims' hostname, serials, product UUID (also without dashes), MACs (as sent and as bare hex digits, so
-- `3c:ec:ef`, `3c-ec-ef` and `3cecef` all match), GPU UUIDs, vendor and model, and the labels' values. Nothing
-- secret. Lower case, as the search compares.
ALTER TABLE nodes ADD COLUMN IF NOT EXISTS search_text TEXT GENERATED ALWAYS AS (lower(
  id || ' ' || coalesce(claims->>'hostname', '') || ' ' || coalesce(claims->>'productSerial', '') || ' ' ||
  coalesce(claims->>'boardSerial', '') || ' ' || coalesce(claims->>'chassisSerial', '') || ' ' ||
  coalesce(claims->>'productUuid', '') || ' ' || coalesce(replace(claims->>'productUuid', '-', ''), '') || ' ' ||
  coalesce((claims->'macs')::text, '') || ' ' ||
  coalesce(regexp_replace((claims->'macs')::text, '[:.\- "\[\]]', '', 'g'), '') || ' ' ||
  coalesce((claims->'gpuUuids')::text, '') || ' ' || coalesce(claims->>'sysVendor', '') || ' ' ||
  coalesce(claims->>'productName', '') || ' ' || coalesce(jsonb_path_query_array(labels, '$.*')::text, '')
)) STORED;

-- A trigram index over it answers `search_text LIKE '%…%'` without reading every node of the tenant (pg_trgm:
-- migration 20261203010000 creates it where it can; without it the search works the same, by scan).
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    EXECUTE 'CREATE INDEX IF NOT EXISTS nodes_search_trgm ON nodes USING gin (search_text gin_trgm_ops)';
  END IF;
END;
$$;

-- The list pages a tenant's nodes in id order and counts them: both read this index only.
CREATE INDEX IF NOT EXISTS nodes_tenant_id_idx ON nodes (tenant_id, id);
-- "Certificate expiring within": a range on the end of the current certificate.
CREATE INDEX IF NOT EXISTS nodes_tenant_cert_not_after_idx ON nodes (tenant_id, cert_not_after);
-- A search for an IP finds the nodes whose join request came from it (nodes hold no address of their own).
CREATE INDEX IF NOT EXISTS join_requests_node_ip ON join_requests (ip text_pattern_ops) WHERE node_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS join_requests_node_client_address ON join_requests (client_address text_pattern_ops) WHERE node_id IS NOT NULL;

-- The queue's search at 10,000 pending requests. A search for a MAC, serial, UUID or request id matches a few
-- requests, but `search_text LIKE '%…%'` read every pending row to count them (about 20 ms of scan, more under
-- load). A trigram index over the pending requests' search text finds them in about a millisecond; a search
-- that matches thousands (a vendor name) still reads them, as before.
--
-- pg_trgm ships with PostgreSQL (contrib, a trusted extension since PostgreSQL 13, so a database owner may
-- create it) and with the embedded PostgreSQL. Where it cannot be created, the migration goes on without the
-- index: the search works the same, by scan.
DO $$
BEGIN
  CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'pg_trgm is not available (%): the queue search will scan instead of using a trigram index', SQLERRM;
END;
$$;

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    EXECUTE 'CREATE INDEX join_requests_search_trgm ON join_requests USING gin (search_text gin_trgm_ops) WHERE state = ''pending''';
  END IF;
END;
$$;

-- A bulk approval by filter reads the site's tokens that can still admit a retry once per page (a hash), instead
-- of probing each pending request's token.
CREATE INDEX join_tokens_site_live ON join_tokens (site_id) WHERE revoked_at IS NULL;

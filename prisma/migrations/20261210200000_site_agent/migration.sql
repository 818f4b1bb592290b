-- The site agent: secret references to the discovery tokens it mints, and the site's cap on them.

-- How many live, unredeemed discovery tokens a site's agents may hold at once (docs/operator-guide.md "The site agent").
ALTER TABLE "sites" ADD COLUMN "site_agent_token_cap" INTEGER NOT NULL DEFAULT 64;

-- One row per discovery token a site agent minted: the token sealed under BETTER_COMPUTE_SECRET until the
-- agent that minted it redeems it once (then `sealed` is cleared). At most one live reference per site and MAC.
CREATE TABLE "secret_refs" (
  "id"               TEXT PRIMARY KEY,
  "token_id"         TEXT NOT NULL,
  "site_id"          TEXT NOT NULL,
  "node_id"          TEXT NOT NULL,
  "mac"              TEXT NOT NULL,
  "boot_lease_epoch" BIGINT NOT NULL,
  "sealed"           BYTEA,
  "expires_at"       TIMESTAMPTZ(6) NOT NULL,
  "redeemed_at"      TIMESTAMPTZ(6),
  "superseded_at"    TIMESTAMPTZ(6),
  "created_at"       TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX "secret_refs_live_mac_key" ON "secret_refs" ("site_id", "mac") WHERE "superseded_at" IS NULL;
CREATE INDEX "secret_refs_token_id_idx" ON "secret_refs" ("token_id");
-- "Is this MAC another site's?": a live reference of another site's agent.
CREATE INDEX "secret_refs_live_mac" ON "secret_refs" ("mac") WHERE "superseded_at" IS NULL;
-- The cap counts a site's live discovery tokens.
CREATE INDEX "join_tokens_live_discovery_site" ON "join_tokens" ("site_id") WHERE "role" = 'discovery' AND "revoked_at" IS NULL AND "uses_left" > 0;

-- security.site-agent.refused events through the shared rate limit, like record_session_refusal.
CREATE FUNCTION record_site_agent_refusal(p_tenant text, p_key text, p_data jsonb, p_limit integer, p_window interval)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  hit record;
BEGIN
  SELECT * INTO hit FROM rate_limit_hit(p_key, p_limit, p_window);
  IF hit.allowed THEN
    INSERT INTO events (tenant_id, type, data)
    VALUES (p_tenant, 'security.site-agent.refused', p_data || jsonb_build_object('suppressed', hit.suppressed));
  END IF;
  RETURN hit.allowed;
END $$;

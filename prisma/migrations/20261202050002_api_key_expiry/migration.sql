-- An API key may expire: past expires_at it authenticates nothing (NULL: it lives until revoked).
ALTER TABLE "api_keys" ADD COLUMN "expires_at" TIMESTAMPTZ(6);

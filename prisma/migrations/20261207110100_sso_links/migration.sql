-- Single sign-on whose verified email matches an operator with a password (or a root admin) is not linked
-- to it by the email alone: the sign-in stages a link here, and the account's own password completes it.
-- One-time, short-lived; only the SHA-256 of the secret is stored.
CREATE TABLE "sso_links" (
  "id" TEXT PRIMARY KEY,
  "secret_hash" BYTEA NOT NULL,
  "operator_id" TEXT NOT NULL REFERENCES "operators" ("id") ON DELETE CASCADE,
  "oidc_subject" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  "expires_at" TIMESTAMPTZ(6) NOT NULL,
  "used_at" TIMESTAMPTZ(6)
);
CREATE INDEX "sso_links_operator_id_idx" ON "sso_links" ("operator_id");

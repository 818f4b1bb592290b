-- Invitations: an admin invites a person by email with a role in a tenant. The link's secret is stored only
-- as its SHA-256; an invitation is used once, revocable, and valid until expires_at (7 days).
CREATE TABLE "invitations" (
  "id" TEXT PRIMARY KEY,
  "tenant_id" TEXT NOT NULL REFERENCES "tenants"("id") ON DELETE CASCADE,
  "email" TEXT NOT NULL,
  "role" TEXT NOT NULL,
  "secret_hash" BYTEA NOT NULL,
  "created_by" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  "expires_at" TIMESTAMPTZ(6) NOT NULL,
  "accepted_at" TIMESTAMPTZ(6),
  "accepted_by" TEXT,
  "revoked_at" TIMESTAMPTZ(6)
);
CREATE INDEX "invitations_tenant_id_created_at_idx" ON "invitations" ("tenant_id", "created_at");

-- Shown in the operator list.
ALTER TABLE "operators" ADD COLUMN "last_sign_in_at" TIMESTAMPTZ(6);

-- The approver role: decides join requests, nothing else.
ALTER TABLE "memberships" DROP CONSTRAINT "memberships_role_check";
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_role_check" CHECK ("role" IN ('admin', 'operator', 'approver', 'viewer'));
ALTER TABLE "api_keys" DROP CONSTRAINT "api_keys_role_check";
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_role_check" CHECK ("role" IN ('admin', 'operator', 'approver', 'viewer'));
ALTER TABLE "invitations" ADD CONSTRAINT "invitations_role_check" CHECK ("role" IN ('admin', 'operator', 'approver', 'viewer'));

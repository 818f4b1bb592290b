-- The database's clock is the one authority for expiry. Tests may freeze it per session with
-- SET compute.now = '...'; production never sets it.
CREATE FUNCTION compute_now() RETURNS timestamptz
LANGUAGE sql STABLE AS $$
  SELECT COALESCE(NULLIF(current_setting('compute.now', true), '')::timestamptz, now())
$$;

CREATE TABLE "tenants" (
  "id" TEXT PRIMARY KEY,
  "name" TEXT NOT NULL UNIQUE,
  "is_root" BOOLEAN NOT NULL DEFAULT false,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
-- At most one root tenant.
CREATE UNIQUE INDEX "tenants_one_root" ON "tenants" ("is_root") WHERE "is_root";

CREATE TABLE "operators" (
  "id" TEXT PRIMARY KEY,
  "email" TEXT NOT NULL UNIQUE,
  "name" TEXT NOT NULL,
  "password_hash" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);

CREATE TABLE "memberships" (
  "operator_id" TEXT NOT NULL REFERENCES "operators"("id") ON DELETE CASCADE,
  "tenant_id" TEXT NOT NULL REFERENCES "tenants"("id") ON DELETE CASCADE,
  "role" TEXT NOT NULL CHECK ("role" IN ('admin', 'operator', 'viewer')),
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  PRIMARY KEY ("operator_id", "tenant_id")
);

CREATE TABLE "api_keys" (
  "id" TEXT PRIMARY KEY,
  "tenant_id" TEXT NOT NULL REFERENCES "tenants"("id"),
  "role" TEXT NOT NULL CHECK ("role" IN ('admin', 'operator', 'viewer')),
  "name" TEXT NOT NULL,
  "secret_hash" BYTEA NOT NULL,
  "created_by" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  "revoked_at" TIMESTAMPTZ(6),
  "last_used_at" TIMESTAMPTZ(6)
);
CREATE INDEX "api_keys_tenant_id_idx" ON "api_keys" ("tenant_id");

CREATE TABLE "sites" (
  "id" TEXT PRIMARY KEY,
  "owner_tenant_id" TEXT NOT NULL REFERENCES "tenants"("id"),
  "name" TEXT NOT NULL,
  "kind" TEXT NOT NULL CHECK ("kind" IN ('platform', 'custom')),
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  "archived_at" TIMESTAMPTZ(6),
  UNIQUE ("owner_tenant_id", "name")
);

CREATE TABLE "pools" (
  "id" TEXT PRIMARY KEY,
  "site_id" TEXT NOT NULL REFERENCES "sites"("id"),
  "owner_tenant_id" TEXT NOT NULL REFERENCES "tenants"("id"),
  "name" TEXT NOT NULL,
  "agent" TEXT NOT NULL CHECK ("agent" IN ('bcd', 'none')),
  "policy" JSONB NOT NULL DEFAULT '{}',
  "acceptance_checks" TEXT[] NOT NULL DEFAULT '{}',
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  "archived_at" TIMESTAMPTZ(6),
  UNIQUE ("site_id", "name")
);

-- Who owns each resource an action can be decided on: the authorization projection.
CREATE TABLE "authz_resources" (
  "resource" TEXT PRIMARY KEY,
  "tenant_id" TEXT NOT NULL,
  "kind" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE INDEX "authz_resources_tenant_id_idx" ON "authz_resources" ("tenant_id");

CREATE TABLE "events" (
  "id" BIGSERIAL PRIMARY KEY,
  "tenant_id" TEXT NOT NULL,
  "type" TEXT NOT NULL,
  "data" JSONB NOT NULL,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE INDEX "events_tenant_id_type_id_idx" ON "events" ("tenant_id", "type", "id");

CREATE TABLE "audit_log" (
  "id" BIGSERIAL PRIMARY KEY,
  "tenant_id" TEXT NOT NULL,
  "actor" TEXT NOT NULL,
  "action" TEXT NOT NULL,
  "resource" TEXT NOT NULL,
  "data" JSONB NOT NULL,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE INDEX "audit_log_tenant_id_id_idx" ON "audit_log" ("tenant_id", "id");

CREATE TABLE "join_tokens" (
  "id" TEXT PRIMARY KEY,
  "tenant_id" TEXT NOT NULL REFERENCES "tenants"("id"),
  "pool_id" TEXT REFERENCES "pools"("id"),
  "site_id" TEXT NOT NULL REFERENCES "sites"("id"),
  "role" TEXT NOT NULL CHECK ("role" IN ('node', 'site', 'provisioned', 'discovery')),
  "secret_hash" BYTEA NOT NULL,
  "max_uses" INTEGER NOT NULL CHECK ("max_uses" BETWEEN 1 AND 10000),
  "uses_left" INTEGER NOT NULL CHECK ("uses_left" >= 0),
  "expect" JSONB,
  "allow_reclaim" BOOLEAN NOT NULL DEFAULT false,
  "hosted" TEXT CHECK ("hosted" IN ('kubernetes')),
  "bound_mac" TEXT,
  "expires_at" TIMESTAMPTZ(6) NOT NULL,
  "revoked_at" TIMESTAMPTZ(6),
  "created_by" TEXT NOT NULL,
  "idempotency_key" TEXT,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  UNIQUE ("tenant_id", "created_by", "idempotency_key")
);
CREATE INDEX "join_tokens_pool_id_created_at_idx" ON "join_tokens" ("pool_id", "created_at");

CREATE TABLE "nodes" (
  "id" TEXT PRIMARY KEY,
  "tenant_id" TEXT NOT NULL REFERENCES "tenants"("id"),
  "site_id" TEXT NOT NULL REFERENCES "sites"("id"),
  "pool_id" TEXT REFERENCES "pools"("id"),
  "role" TEXT NOT NULL,
  "state" TEXT NOT NULL,
  "trust" TEXT NOT NULL,
  "hardware_key" BYTEA,
  "hardware_key_trusted" BOOLEAN NOT NULL DEFAULT false,
  "identity_generation" INTEGER NOT NULL DEFAULT 1,
  "claims" JSONB NOT NULL DEFAULT '{}',
  "attestor" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE INDEX "nodes_pool_id_idx" ON "nodes" ("pool_id");
-- One node per trusted machine: the index that turns a racing second join into a conflict.
CREATE UNIQUE INDEX "nodes_trusted_hardware_key" ON "nodes" ("hardware_key") WHERE "hardware_key_trusted";

CREATE TABLE "node_certs" (
  "serial" TEXT PRIMARY KEY,
  "node_id" TEXT NOT NULL REFERENCES "nodes"("id") ON DELETE CASCADE,
  "identity_generation" INTEGER NOT NULL,
  "role" TEXT NOT NULL,
  "spki_sha256" BYTEA NOT NULL,
  "der" BYTEA NOT NULL,
  "not_before" TIMESTAMPTZ(6) NOT NULL,
  "not_after" TIMESTAMPTZ(6) NOT NULL,
  "revoked_at" TIMESTAMPTZ(6),
  "revocation_reason" TEXT,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE INDEX "node_certs_node_id_idx" ON "node_certs" ("node_id");

CREATE TABLE "join_requests" (
  "id" TEXT PRIMARY KEY,
  "tenant_id" TEXT,
  "site_id" TEXT NOT NULL REFERENCES "sites"("id"),
  "pool_id" TEXT REFERENCES "pools"("id"),
  "attestor" TEXT NOT NULL,
  "state" TEXT NOT NULL CHECK ("state" IN ('pending', 'approved', 'rejected', 'expired', 'consumed')),
  "machine_key" TEXT NOT NULL,
  "claims" JSONB NOT NULL DEFAULT '{}',
  "hardware_key" BYTEA,
  "mac" TEXT,
  "ip" TEXT,
  "workflow_id" TEXT,
  "vouched_by" TEXT,
  "boot_lease_epoch" BIGINT,
  "csr_sha256" TEXT NOT NULL,
  "expires_at" TIMESTAMPTZ(6) NOT NULL,
  "decided_at" TIMESTAMPTZ(6),
  "decided_by" TEXT,
  "reason" TEXT,
  "consumed_at" TIMESTAMPTZ(6),
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE INDEX "join_requests_site_id_state_idx" ON "join_requests" ("site_id", "state");
-- A machine has at most one pending request.
CREATE UNIQUE INDEX "join_requests_one_pending" ON "join_requests" ("machine_key") WHERE "state" = 'pending';

CREATE TABLE "rate_limits" (
  "key" TEXT PRIMARY KEY,
  "window_start" TIMESTAMPTZ(6) NOT NULL,
  "count" INTEGER NOT NULL,
  "suppressed" INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE "pki_bundles" (
  "id" TEXT PRIMARY KEY,
  "trust_domain" TEXT NOT NULL,
  "sealed" BYTEA NOT NULL,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);

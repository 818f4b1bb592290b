-- Trust rotation (server/pki/rotation/). The sealed PKI bundle holds the other key of every rotation under way;
-- `trust_version` counts the steps, so every instance notices a change by polling one integer (and LISTENs on
-- `pki_changed` for speed), and a step writes the new seal only when the version it read is still current.
ALTER TABLE "pki_bundles" ADD COLUMN "trust_version" INTEGER NOT NULL DEFAULT 1;

-- The cleartext story of each rotation: what an operator and the PKI page see without opening the bundle.
CREATE TABLE "pki_rotations" (
  "id" TEXT NOT NULL,
  "kind" TEXT NOT NULL,
  "phase" TEXT NOT NULL,
  -- The key in use when the rotation was prepared, and the key it prepared (pins).
  "previous_pin" TEXT NOT NULL,
  "next_pin" TEXT NOT NULL,
  "imported" BOOLEAN NOT NULL DEFAULT false,
  "prepared_at" TIMESTAMPTZ(6) NOT NULL,
  "prepared_by" TEXT NOT NULL,
  "prepared_version" INTEGER NOT NULL,
  "activated_at" TIMESTAMPTZ(6),
  "activated_by" TEXT,
  "activated_version" INTEGER,
  "retired_at" TIMESTAMPTZ(6),
  "retired_by" TEXT,
  "retired_version" INTEGER,
  -- Set when a node CA was retired with live certificates (`--force --reason`).
  "forced_reason" TEXT,
  CONSTRAINT "pki_rotations_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "pki_rotations_kind" CHECK ("kind" IN ('serving-ca', 'join-signing', 'join-encryption', 'node-ca', 'command-signing')),
  CONSTRAINT "pki_rotations_phase" CHECK ("phase" IN ('prepared', 'active', 'retired'))
);
-- At most one rotation per key under way.
CREATE UNIQUE INDEX "pki_rotations_under_way" ON "pki_rotations" ("kind") WHERE "phase" <> 'retired';
CREATE INDEX "pki_rotations_kind_prepared_at" ON "pki_rotations" ("kind", "prepared_at");

-- The pin of the node CA that issued each certificate; null for certificates issued before this column, which
-- count as the previous CA's when a node CA is retired.
ALTER TABLE "node_certs" ADD COLUMN "ca_pin" TEXT;
CREATE INDEX "node_certs_live_by_ca" ON "node_certs" ("ca_pin", "not_after") WHERE "revoked_at" IS NULL;

-- The trust version each node reported in its last Hello (null: never reported). The sessions code writes it;
-- rotation status reads it. IF NOT EXISTS: the sessions migration adds the same column.
ALTER TABLE "nodes" ADD COLUMN IF NOT EXISTS "trust_version" INTEGER;

-- Machines an operator expects (an import): a discovery join whose vouched MAC, or whose trusted serial or
-- product UUID, matches a waiting entry is admitted into its pool without waiting. Identifiers are stored in
-- their comparison form (MAC aa:bb:cc:dd:ee:ff, serial lower case, UUIDs lower-case dashed).
CREATE TABLE "expected_machines" (
  "id" TEXT NOT NULL,
  "tenant_id" TEXT NOT NULL,
  "site_id" TEXT NOT NULL,
  "import_id" TEXT NOT NULL,
  "serial" TEXT,
  "product_uuid" TEXT,
  "mac" TEXT,
  "gpu_uuid" TEXT,
  "pool_id" TEXT NOT NULL,
  "hostname" TEXT,
  "expires_at" TIMESTAMPTZ(6),
  "arrived_at" TIMESTAMPTZ(6),
  "request_id" TEXT,
  "created_by" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  CONSTRAINT "expected_machines_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "expected_machines_mac" ON "expected_machines" ("site_id", "mac") WHERE "arrived_at" IS NULL AND "mac" IS NOT NULL;
CREATE INDEX "expected_machines_serial" ON "expected_machines" ("site_id", "serial") WHERE "arrived_at" IS NULL AND "serial" IS NOT NULL;
CREATE INDEX "expected_machines_uuid" ON "expected_machines" ("site_id", "product_uuid") WHERE "arrived_at" IS NULL AND "product_uuid" IS NOT NULL;
CREATE INDEX "expected_machines_site_created" ON "expected_machines" ("site_id", "created_at");

-- Approval rules: per site, an ordered list that decides discovery joins inside their own join transaction.
CREATE TABLE "approval_rules" (
  "id" TEXT NOT NULL,
  "tenant_id" TEXT NOT NULL,
  "site_id" TEXT NOT NULL,
  "position" INTEGER NOT NULL,
  "name" TEXT NOT NULL,
  "match" JSONB NOT NULL,
  "action" TEXT NOT NULL,
  "pool_id" TEXT,
  "max_admissions" INTEGER,
  "admissions" INTEGER NOT NULL DEFAULT 0,
  "valid_until" TIMESTAMPTZ(6),
  "created_by" TEXT NOT NULL,
  "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  CONSTRAINT "approval_rules_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "approval_rules_site_position" ON "approval_rules" ("site_id", "position");

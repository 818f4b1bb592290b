-- Renewal (joining.md "Renewal") and the node lifecycle.

-- The replay cache of renewal proofs, shared by every API instance: a proof (the hash of its popSig) is
-- refused while its row is younger than 120 seconds. Rows are pruned by the renewals themselves.
CREATE TABLE "renew_proofs" (
  "proof_sha256" BYTEA PRIMARY KEY,
  "node_id" TEXT NOT NULL,
  "used_at" TIMESTAMPTZ(6) NOT NULL
);
CREATE INDEX "renew_proofs_used_at_idx" ON "renew_proofs" ("used_at");

-- Cordoned nodes take no new work; deleting a node needs a cordon first.
ALTER TABLE "nodes" ADD COLUMN "cordoned" BOOLEAN NOT NULL DEFAULT false;
-- Renewal looks a presented leaf up by the hash of its bytes (and then compares the bytes).
CREATE INDEX "node_certs_der_sha256_idx" ON "node_certs" (sha256("der"));

-- security.renew.refused events through the shared rate limit, like record_join_refusals.
CREATE FUNCTION record_renew_refusal(p_tenant text, p_key text, p_data jsonb, p_limit integer, p_window interval)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  hit record;
BEGIN
  SELECT * INTO hit FROM rate_limit_hit(p_key, p_limit, p_window);
  IF hit.allowed THEN
    INSERT INTO events (tenant_id, type, data)
    VALUES (p_tenant, 'security.renew.refused', p_data || jsonb_build_object('suppressed', hit.suppressed));
  END IF;
  RETURN hit.allowed;
END $$;

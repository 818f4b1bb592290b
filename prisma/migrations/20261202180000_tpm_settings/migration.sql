-- The tpm attestor's settings per site: enrollment of unlisted EKs, how long their requests wait, and the
-- allow-list of EK public-key hashes admitted without an operator (server/join/attestors/tpm/settings.ts).
ALTER TABLE sites ADD COLUMN tpm jsonb NOT NULL DEFAULT '{}';

-- The EK a certified tpm join proved (hex SHA-256 of its DER SubjectPublicKeyInfo) and the node it names: an
-- unchanged EK reclaims its node, and no two nodes hold one EK. The tpm attestor writes it in the admission
-- transaction before the node row itself (hence the deferred foreign key); nodes.delete frees it.
CREATE TABLE tpm_ek_bindings (
  ek_sha256 text PRIMARY KEY,
  node_id text NOT NULL UNIQUE REFERENCES nodes (id) DEFERRABLE INITIALLY DEFERRED,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- What the queue shows of a tpm enrollment: the EK hash, the EK certificate's issuer (or "no EK certificate"),
-- why it did not chain, and the AK statement. Null for every other attestor's requests.
ALTER TABLE join_requests ADD COLUMN tpm jsonb;

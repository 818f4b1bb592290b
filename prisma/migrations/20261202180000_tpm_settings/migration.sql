-- The tpm attestor's settings per site: enrollment of unlisted EKs, how long their requests wait, and the
-- allow-list of EK public-key hashes admitted without an operator (server/join/attestors/tpm/settings.ts).
ALTER TABLE sites ADD COLUMN tpm jsonb NOT NULL DEFAULT '{}';

-- The EK a certified tpm join proved (hex SHA-256 of its DER SubjectPublicKeyInfo): an unchanged EK reclaims
-- its node, and no two live nodes hold one EK. nodes.delete frees it, as it frees the hardware key.
ALTER TABLE nodes ADD COLUMN tpm_ek_sha256 text;
CREATE UNIQUE INDEX nodes_tpm_ek_sha256_key ON nodes (tpm_ek_sha256) WHERE tpm_ek_sha256 IS NOT NULL;

-- What the queue shows of a tpm enrollment: the EK hash, the EK certificate's issuer (or "no EK certificate"),
-- why it did not chain, and the AK statement. Null for every other attestor's requests.
ALTER TABLE join_requests ADD COLUMN tpm jsonb;

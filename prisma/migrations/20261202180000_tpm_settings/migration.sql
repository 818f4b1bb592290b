-- The tpm attestor's settings per site: enrollment of unlisted EKs, how long their requests wait, and the
-- allow-list of EK public-key hashes admitted without an operator (server/join/attestors/tpm/settings.ts).
ALTER TABLE sites ADD COLUMN tpm jsonb NOT NULL DEFAULT '{}';

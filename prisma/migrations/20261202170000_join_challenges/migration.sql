-- The challenge store of JoinService's challenge rounds (an attestor answers round one with a signed nonce and
-- decides on round two): shared by every instance, single use (the round-two transaction deletes the row it
-- used), short-lived, and bound to the attestor, the CSR's hash and a subject (a node id, an EK hash). Only
-- the nonce's SHA-256 is stored, so a reader of the table cannot answer a challenge.
CREATE TABLE join_challenges (
  nonce_sha256  BYTEA PRIMARY KEY,
  attestor      TEXT NOT NULL,
  csr_sha256    TEXT NOT NULL,
  subject       TEXT NOT NULL,
  answer_sha256 BYTEA,
  created_at    TIMESTAMPTZ NOT NULL DEFAULT compute_now(),
  expires_at    TIMESTAMPTZ NOT NULL,
  CONSTRAINT join_challenges_nonce_length CHECK (octet_length(nonce_sha256) = 32)
);
CREATE INDEX join_challenges_expires_at_idx ON join_challenges (expires_at);

/** The presented leaf, found by the hash of its bytes and then compared byte for byte, with its node. */
export const SELECT_PRESENTED_LEAF = `
SELECT c.serial, c.node_id, c.identity_generation AS cert_generation, c.role,
       c.revoked_at IS NOT NULL AS is_revoked, c.not_after <= compute_now() AS is_expired,
       n.identity_generation AS node_generation, n.state, n.tenant_id, n.site_id,
       extract(epoch FROM compute_now())::float8 AS now_seconds
  FROM node_certs c JOIN nodes n ON n.id = c.node_id
 WHERE sha256(c.der) = $1 AND c.der = $2`;

/** Takes the node's row lock, the lock revokeIdentity and the other lifecycle changes take too. */
export const LOCK_NODE = `SELECT identity_generation AS node_generation, state FROM nodes WHERE id = $1 FOR UPDATE`;

/**
 * The leaf's standing, read in a statement after the lock: a statement that waited on the lock still reads
 * its own older snapshot of other tables, so a revocation committed meanwhile would go unseen.
 */
export const LEAF_STANDING = `
SELECT (c.revoked_at IS NOT NULL OR c.not_after <= compute_now() OR c.identity_generation <> n.identity_generation OR n.state = 'retired') AS is_dead,
       n.identity_generation AS node_generation, compute_now() AS now
  FROM node_certs c JOIN nodes n ON n.id = c.node_id WHERE c.serial = $1`;

/**
 * Records the proof unless the same one was used in the last 120 seconds: an older row is taken over, a
 * fresh one makes the insert return nothing. Concurrent uses of one proof wait on the key and see the first.
 */
export const USE_PROOF = `
INSERT INTO renew_proofs (proof_sha256, node_id, used_at) VALUES ($1, $2, compute_now())
ON CONFLICT (proof_sha256) DO UPDATE SET used_at = EXCLUDED.used_at, node_id = EXCLUDED.node_id
 WHERE renew_proofs.used_at <= compute_now() - interval '120 seconds'
RETURNING 1`;

export const PRUNE_PROOFS = `DELETE FROM renew_proofs WHERE used_at <= compute_now() - interval '120 seconds'`;

export const INSERT_RENEWED_CERT = `
INSERT INTO node_certs (serial, node_id, identity_generation, role, spki_sha256, der, not_before, not_after)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`;

export const KEY_CERTIFIED = `SELECT 1 FROM node_certs WHERE spki_sha256 = $1`;

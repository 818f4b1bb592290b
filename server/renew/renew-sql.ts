/** The presented leaf, found by the hash of its bytes and then compared byte for byte, with its node. */
export const SELECT_PRESENTED_LEAF = `
SELECT c.serial, c.node_id, c.identity_generation AS cert_generation, c.role,
       c.revoked_at IS NOT NULL AS is_revoked, c.not_after <= compute_now() AS is_expired,
       n.identity_generation AS node_generation, n.state, n.tenant_id, n.site_id,
       extract(epoch FROM compute_now())::float8 AS now_seconds
  FROM node_certs c JOIN nodes n ON n.id = c.node_id
 WHERE sha256(c.der) = $1 AND c.der = $2`;

/** Takes the node's row lock, the lock revokeIdentity and the other lifecycle changes take too. */
export const LOCK_NODE = `SELECT 1 FROM nodes WHERE id = $1 FOR UPDATE`;

/**
 * Everything a renewal writes, in one statement after the node's lock (a statement that waited on the lock
 * would keep its older snapshot of node_certs, so the standing is read here, after it): the leaf is still
 * live (unrevoked, unexpired, of the node's generation, the node not retired); the proof is recorded unless
 * used in the last 120 seconds (an older row is taken over; concurrent uses of one proof wait on its key and
 * see the first); the new certificate is inserted when both hold and its key was never certified (the
 * unique index decides a race).
 */
export const WRITE_RENEWAL = `
WITH standing AS (
  SELECT NOT (c.revoked_at IS NOT NULL OR c.not_after <= compute_now() OR c.identity_generation <> n.identity_generation
              OR n.state = 'retired') AS live, n.identity_generation AS generation
    FROM node_certs c JOIN nodes n ON n.id = c.node_id WHERE c.serial = $1
), proof AS (
  INSERT INTO renew_proofs (proof_sha256, node_id, used_at)
  SELECT $2, $3, compute_now() WHERE (SELECT live FROM standing)
  ON CONFLICT (proof_sha256) DO UPDATE SET used_at = EXCLUDED.used_at, node_id = EXCLUDED.node_id
   WHERE renew_proofs.used_at <= compute_now() - interval '120 seconds'
  RETURNING 1
), cert AS (
  INSERT INTO node_certs (serial, node_id, identity_generation, role, spki_sha256, der, not_before, not_after)
  SELECT $4, $3, (SELECT generation FROM standing), $5, $6, $7, $8, $9
   WHERE EXISTS (SELECT 1 FROM proof) AND NOT EXISTS (SELECT 1 FROM node_certs WHERE spki_sha256 = $6)
  RETURNING 1
)
SELECT (SELECT live FROM standing) AS live, EXISTS (SELECT 1 FROM proof) AS fresh, EXISTS (SELECT 1 FROM cert) AS issued`;

export const PRUNE_PROOFS = `DELETE FROM renew_proofs WHERE used_at <= compute_now() - interval '120 seconds'`;

import { RENEW_REPLAY_WINDOW_SECONDS } from '../../protocol/renew-wire';

// How long a used proof stays in the replay cache, as SQL: the constant is a number, so it is written into
// the statement text (the statements are named prepared statements with fixed parameter lists).
const REPLAY_WINDOW = `interval '${Math.trunc(RENEW_REPLAY_WINDOW_SECONDS)} seconds'`;

/** The window of the per-node renewal limit (renew-limit.ts): certificates issued to a node within it count. */
const ISSUE_WINDOW = `interval '1 hour'`;

/**
 * The presented leaves of a group of renewals, each found by the hash of its bytes (an index) and then
 * compared byte for byte, with its node; `ord` is the 1-based position of the leaf in the arrays. For a
 * `ramdisk` leaf also when its identity was first issued (the node row's creation, at its join) and the site's
 * discovery settings, which cap the identity's total life (ramdisk-life.ts). `issued_last_hour`: the node's
 * certificates written in the last hour (its `node_certs` rows, by the node_id index), for the per-node limit.
 * The leaf is looked up per item (LATERAL … LIMIT 1, which the planner cannot flatten into a join): as a plain
 * join, a node_certs whose expression index has no statistics yet (a table that grew since its last ANALYZE)
 * was hash-joined after hashing every row's DER, a group's cost growing with the table (6–18 ms at 6,000 rows
 * against 0.2 ms per group of 12 this way).
 */
export const SELECT_PRESENTED_LEAVES = `
SELECT i.ord::int AS ord, c.serial, c.node_id, c.identity_generation AS cert_generation, c.role, c.allowed_kinds,
       c.revoked_at IS NOT NULL AS is_revoked, c.not_after <= compute_now() AS is_expired,
       n.identity_generation AS node_generation, n.state, n.tenant_id, n.site_id,
       extract(epoch FROM compute_now())::float8 AS now_seconds,
       CASE WHEN c.role = 'ramdisk' THEN extract(epoch FROM n.created_at)::float8 END AS first_issued_seconds,
       CASE WHEN c.role = 'ramdisk' THEN (SELECT s.discovery FROM sites s WHERE s.id = n.site_id) END AS site_discovery,
       (SELECT count(*) FROM node_certs h WHERE h.node_id = c.node_id AND h.created_at > compute_now() - ${ISSUE_WINDOW})::int AS issued_last_hour
  FROM unnest($1::bytea[], $2::bytea[]) WITH ORDINALITY AS i(hash, der, ord)
 CROSS JOIN LATERAL (SELECT * FROM node_certs x WHERE sha256(x.der) = i.hash AND x.der = i.der LIMIT 1) c
  JOIN nodes n ON n.id = c.node_id`;

/**
 * Takes the row locks of a group's nodes, in id order (so two groups cannot deadlock), the lock
 * revokeIdentity and the other lifecycle changes take too. `$ids` is replaced by escaped literals: it runs
 * in the same simple query as BEGIN, which cannot take parameters.
 */
export const LOCK_NODES = `SELECT 1 FROM nodes WHERE id IN ($ids) ORDER BY id FOR UPDATE`;

/**
 * Everything a group of renewals writes, in one statement after the nodes' locks (a statement that waited on
 * a lock would keep its older snapshot of node_certs, so the standing is read here, after them). For each
 * renewal: the leaf is still live (unrevoked, unexpired, of the node's generation, the node not retired);
 * the proof was not used within RENEW_REPLAY_WINDOW_SECONDS (`replayed`); the new key was never certified
 * (`key_used`); the node was issued fewer than `$10` certificates in the last hour (`over_limit`: the count is
 * read after the node's lock, and one group never holds two renewals of one node, so the limit is exact across
 * instances). Only a renewal that passes all four records its proof (an older row is taken over;
 * concurrent uses of one proof by another instance wait on its key and see the first, `fresh` false) and
 * its certificate (the unique index decides a race on the key with another instance), so a refused renewal
 * writes nothing, as when each renewal had its own transaction. The new certificate keeps the presented one's
 * allowed command kinds (`allowed_kinds`, copied from the leaf's row read here: no extra round trip). The
 * group never holds two renewals with one proof or one new key (GroupRunner's keys), so no row is written
 * twice. Answers one row per renewal, in order.
 */
export const WRITE_RENEWALS = `
WITH item AS (
  SELECT * FROM unnest($1::text[], $2::bytea[], $3::text[], $4::text[], $5::text[], $6::bytea[], $7::bytea[], $8::timestamptz[], $9::timestamptz[], $11::text[])
    WITH ORDINALITY AS i(leaf_serial, proof, node_id, serial, role, spki, der, not_before, not_after, ca_pin, ord)
), standing AS (
  SELECT i.ord, n.identity_generation AS generation, c.allowed_kinds,
         NOT (c.revoked_at IS NOT NULL OR c.not_after <= compute_now() OR c.identity_generation <> n.identity_generation
              OR n.state = 'retired') AS live,
         EXISTS (SELECT 1 FROM renew_proofs r WHERE r.proof_sha256 = i.proof AND r.used_at > compute_now() - ${REPLAY_WINDOW}) AS replayed,
         EXISTS (SELECT 1 FROM node_certs o WHERE o.spki_sha256 = i.spki) AS key_used,
         (SELECT count(*) FROM node_certs h WHERE h.node_id = i.node_id AND h.created_at > compute_now() - ${ISSUE_WINDOW}) >= $10::int AS over_limit
    FROM item i JOIN node_certs c ON c.serial = i.leaf_serial JOIN nodes n ON n.id = c.node_id
), proof AS (
  INSERT INTO renew_proofs (proof_sha256, node_id, used_at)
  SELECT i.proof, i.node_id, compute_now() FROM item i JOIN standing s ON s.ord = i.ord WHERE s.live AND NOT s.key_used AND NOT s.over_limit
  ON CONFLICT (proof_sha256) DO UPDATE SET used_at = EXCLUDED.used_at, node_id = EXCLUDED.node_id
   WHERE renew_proofs.used_at <= compute_now() - ${REPLAY_WINDOW}
  RETURNING proof_sha256
), cert AS (
  INSERT INTO node_certs (serial, node_id, identity_generation, role, spki_sha256, der, not_before, not_after, ca_pin, allowed_kinds)
  SELECT i.serial, i.node_id, s.generation, i.role, i.spki, i.der, i.not_before, i.not_after, i.ca_pin, s.allowed_kinds
    FROM item i JOIN standing s ON s.ord = i.ord
   WHERE i.proof IN (SELECT proof_sha256 FROM proof) AND NOT EXISTS (SELECT 1 FROM node_certs o WHERE o.spki_sha256 = i.spki)
  RETURNING serial
)
SELECT COALESCE(s.live, false) AS live, COALESCE(s.replayed, false) AS replayed, COALESCE(s.key_used, false) AS key_used,
       COALESCE(s.over_limit, false) AS over_limit,
       i.proof IN (SELECT proof_sha256 FROM proof) AS fresh, i.serial IN (SELECT serial FROM cert) AS issued
  FROM item i LEFT JOIN standing s ON s.ord = i.ord
 ORDER BY i.ord`;

export const PRUNE_PROOFS = `DELETE FROM renew_proofs WHERE used_at <= compute_now() - ${REPLAY_WINDOW}`;

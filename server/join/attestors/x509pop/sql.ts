// The x509pop attestor's one read, in its own module like every hot-path statement (raw SQL on the
// admission transaction's connection). Sent beside the challenge read, so round two costs one wait more than
// a token join, and only in batches that hold an x509pop join.

/**
 * The presented leaves' node_certs rows (by the SPKI hash, unique; the DER is compared byte for byte by the
 * caller), with their nodes locked (in id order, after the token rows the core locked) and the nodes' pools.
 */
export const SELECT_X509POP_LEAVES = `
SELECT c.serial, encode(c.spki_sha256, 'hex') AS spki_sha256, c.der, c.identity_generation AS cert_generation, c.role AS cert_role,
       c.revoked_at IS NOT NULL AS is_revoked, c.not_after,
       n.id AS node_id, n.tenant_id, n.site_id, n.pool_id, n.role, n.state, n.trust, n.hardware_key_trusted,
       n.identity_generation AS node_generation, n.labels,
       p.id AS p_id, p.agent AS p_agent, p.owner_tenant_id AS p_owner, p.site_id AS p_site, p.archived_at IS NOT NULL AS p_archived,
       p.policy AS p_policy, cardinality(p.acceptance_checks) > 0 AS p_checks
  FROM node_certs c
  JOIN nodes n ON n.id = c.node_id
  LEFT JOIN pools p ON p.id = n.pool_id
 WHERE c.spki_sha256 = ANY($1::bytea[])
 ORDER BY n.id
   FOR UPDATE OF n`;

/**
 * The site agent's statements (server/sites/site-agent-service.ts). A mint runs in one transaction after the
 * site's row lock (FOR NO KEY UPDATE: joins inserting nodes of the site take only a key share and do not wait),
 * so the cap's count and the one-reference-per-MAC rule are exact across API instances.
 */

export const LOCK_SITE = `
SELECT owner_tenant_id, archived_at IS NOT NULL AS is_archived, site_agent_token_cap AS cap
  FROM sites WHERE id = $1 FOR NO KEY UPDATE`;

/** The site's live reference for a MAC (at most one: secret_refs_live_mac_key), with its token's standing. */
export const SELECT_LIVE_REF = `
SELECT r.id, r.node_id, r.boot_lease_epoch::text AS epoch, r.token_id, r.expires_at,
       (t.revoked_at IS NULL AND t.uses_left > 0 AND t.expires_at > compute_now()) AS token_live
  FROM secret_refs r JOIN join_tokens t ON t.id = r.token_id
 WHERE r.site_id = $1 AND r.mac = $2 AND r.superseded_at IS NULL`;

/** A newer lease's epoch supersedes the reference and revokes its token unless a machine already joined with it. */
export const SUPERSEDE_REF = `
WITH r AS (UPDATE secret_refs SET superseded_at = compute_now(), sealed = NULL WHERE id = $1 RETURNING token_id)
UPDATE join_tokens t SET revoked_at = compute_now(), revoked_by = $2
  FROM r WHERE t.id = r.token_id AND t.revoked_at IS NULL AND t.uses_left > 0
RETURNING t.id`;

/**
 * Serialises mints of one MAC across every site of the tenant (the site's row lock covers only its own site, and
 * secret_refs_live_mac_key is per site): taken after the site's lock, so two sites minting the same MAC at once
 * decide one after the other, and the second sees the first's reference (each statement of a READ COMMITTED
 * transaction reads what committed before it). $1 the site's owner tenant, $2 the normalised MAC.
 */
export const LOCK_TENANT_MAC = `SELECT pg_advisory_xact_lock(hashtextextended('site-agent-mac:' || $1 || ':' || $2, 0))`;

/**
 * Whether the MAC is another site's of the same tenant ($4, the site's owner): a node there that is not retired
 * and belongs to that tenant, or a live reference of one of that tenant's other sites. Scoped to the tenant as
 * joining.md scopes a machine's identity (a reclaim and a provisioned join match a machine only within its
 * tenant): the MACs are the machines' own claims, so another tenant's machines, or a hosted pool's machines in
 * a site of ours, must neither block our mints nor tell our site agent, through a refusal, what they claim.
 */
export const MAC_ELSEWHERE = `
SELECT EXISTS (SELECT 1 FROM nodes n JOIN sites s ON s.id = n.site_id
                WHERE compute_node_macs(n.claims) @> ARRAY[$2::text] AND n.site_id <> $1 AND n.state <> 'retired'
                  AND n.tenant_id = $4 AND s.owner_tenant_id = $4)
    OR EXISTS (SELECT 1 FROM secret_refs r JOIN sites s ON s.id = r.site_id
                WHERE r.mac = $3 AND r.site_id <> $1 AND r.superseded_at IS NULL AND r.expires_at > compute_now()
                  AND s.owner_tenant_id = $4)
    AS elsewhere`;

/** The site's live discovery tokens (not revoked, not spent, not expired), whoever minted them. */
export const COUNT_LIVE_DISCOVERY = `
SELECT count(*)::int AS live FROM join_tokens
 WHERE site_id = $1 AND role = 'discovery' AND revoked_at IS NULL AND uses_left > 0 AND expires_at > compute_now()`;

export const INSERT_REF = `
INSERT INTO secret_refs (id, token_id, site_id, node_id, mac, boot_lease_epoch, sealed, expires_at)
VALUES ($1, $2, $3, $4, $5, $6::bigint, $7, $8::timestamptz)`;

/**
 * Redeems a reference once: only the agent that minted it, before it expired or was superseded, while its
 * token is not revoked. The row lock makes a concurrent second redeem wait and then find it redeemed.
 */
export const REDEEM_REF = `
WITH old AS (
  SELECT r.id, r.token_id, r.sealed FROM secret_refs r JOIN join_tokens t ON t.id = r.token_id
   WHERE r.id = $1 AND r.node_id = $2 AND r.redeemed_at IS NULL AND r.superseded_at IS NULL
     AND r.expires_at > compute_now() AND t.revoked_at IS NULL
   FOR UPDATE OF r
)
UPDATE secret_refs r SET redeemed_at = compute_now(), sealed = NULL FROM old WHERE r.id = old.id
RETURNING old.token_id, old.sealed`;

export const RECORD_REFUSAL = 'SELECT record_site_agent_refusal($1, $2, $3::jsonb, $4, $5::interval)';

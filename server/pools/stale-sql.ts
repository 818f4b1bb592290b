// The stale-node policy's statements (server/pools/stale-policy.ts). A node is *disconnected* when it has no
// session row (a live or not yet swept session counts as connected) and its last session ended
// (`session_ended_at`, which a new session clears): a node that never had a session (a pool without bcd) is
// never stale. $1 is the pool id, $2 the step's days (cordonAfterDays, retireAfterDays), $3 a limit.

const DISCONNECTED = `
  n.pool_id = $1 AND n.state <> 'retired' AND n.session_ended_at IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM node_sessions s WHERE s.node_id = n.id)`;

/**
 * Cordon: disconnected for `cordonAfterDays` (the boundary included), and not cordoned by the policy since its
 * last session ended. A node the policy cordoned and an operator uncordoned stays uncordoned until it connects
 * and leaves again.
 */
const CORDON_DUE = `${DISCONNECTED}
  AND n.session_ended_at <= compute_now() - make_interval(days => $2::int)
  AND (n.stale_cordoned_at IS NULL OR n.stale_cordoned_at < n.session_ended_at)`;

/**
 * Retire: cordoned by the policy `retireAfterDays` ago (the boundary included), still cordoned, and not connected
 * since (its last session ended before that cordon).
 */
const RETIRE_DUE = `${DISCONNECTED}
  AND n.cordoned AND n.stale_cordoned_at IS NOT NULL AND n.stale_cordoned_at >= n.session_ended_at
  AND n.stale_cordoned_at <= compute_now() - make_interval(days => $2::int)`;

const STALE_DUE = { cordon: CORDON_DUE, retire: RETIRE_DUE } as const;
export type StaleAction = keyof typeof STALE_DUE;

const COLUMNS = `n.id, n.tenant_id, n.site_id, n.claims, n.cordoned, n.session_ended_at, n.stale_cordoned_at, n.claims->>'hostname' AS hostname`;

/**
 * Up to $3 nodes due for `action`, locked: a node another transaction holds (another instance's worker, a
 * Hello opening its session, an operator's change) is skipped, never waited for, so two workers never handle
 * one node, and the locked row is re-checked against the predicate once its holder commits.
 */
export const lockDue = (action: StaleAction) => `
SELECT ${COLUMNS} FROM nodes n WHERE ${STALE_DUE[action]} ORDER BY n.id LIMIT $3::int FOR UPDATE OF n SKIP LOCKED`;

/** The dry run: the first $3 nodes due for `action`, in id order, unlocked. */
export const listDue = (action: StaleAction) => `
SELECT ${COLUMNS} FROM nodes n WHERE ${STALE_DUE[action]} ORDER BY n.id LIMIT $3::int`;

/** How many nodes are due for `action` now. */
export const countDue = (action: StaleAction) => `SELECT count(*)::int AS count FROM nodes n WHERE ${STALE_DUE[action]}`;

/** Cordons the locked nodes $1 as the policy. */
export const CORDON_STALE = `
UPDATE nodes SET cordoned = true, stale_cordoned_at = compute_now(), updated_at = compute_now() WHERE id = ANY($1::text[])`;

/** The pools whose policy names `staleNodes` (optionally of the tenants $1 only), with the database clock. */
export const POOLS_WITH_POLICY = `
SELECT id, owner_tenant_id, policy->'staleNodes' AS stale_nodes FROM pools
 WHERE policy ? 'staleNodes' AND ($1::text[] IS NULL OR owner_tenant_id = ANY($1::text[]))
 ORDER BY id`;

export type DueRow = {
  id: string;
  tenant_id: string;
  site_id: string;
  claims: unknown;
  cordoned: boolean;
  session_ended_at: Date;
  stale_cordoned_at: Date | null;
  hostname: string | null;
};

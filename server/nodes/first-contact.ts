import type pg from 'pg';

/**
 * The first renewal of an identity generation (under the node's row lock the renewal holds) marks the
 * generation connected and, in the same statement, publishes `node.connected`; when the node is still
 * `adopting` in a pool that runs acceptance checks, `node.acceptance.started` follows it (a later id, so
 * the events list them in that order). Every later renewal of the generation matches no row and writes
 * nothing. Ids come from the events sequence in the SELECT's ORDER BY order.
 */
const RECORD_FIRST_CONTACT = `
WITH first AS (
  UPDATE nodes SET connected_generation = identity_generation
   WHERE id = ANY($1::text[]) AND connected_generation < identity_generation
  RETURNING id, tenant_id, site_id, pool_id, state, identity_generation
), facts AS (
  SELECT f.*, COALESCE(p.acceptance_checks, '{}') AS checks FROM first f LEFT JOIN pools p ON p.id = f.pool_id
)
INSERT INTO events (tenant_id, type, data)
SELECT f.tenant_id, e.type, e.data
  FROM facts f
 CROSS JOIN LATERAL (VALUES
   (1, 'node.connected',
    jsonb_build_object('nodeId', f.id, 'poolId', f.pool_id, 'siteId', f.site_id, 'identityGeneration', f.identity_generation)),
   (2, 'node.acceptance.started',
    jsonb_build_object('nodeId', f.id, 'poolId', f.pool_id, 'checks', to_jsonb(f.checks), 'identityGeneration', f.identity_generation))
 ) AS e(ord, type, data)
 WHERE e.ord = 1 OR (f.state = 'adopting' AND cardinality(f.checks) > 0)
 ORDER BY f.id, e.ord
RETURNING type`;

/**
 * Records the nodes' first contact through the gateway (joining.md "Adopting a brownfield server": "the
 * first renewal loop contact through the gateway"), once per identity generation. Runs on the renewal's
 * transaction client, after the renewals were written and while the nodes' row locks are held, so it commits
 * or rolls back with them (a group of renewals takes one call). Answers the event types it published (none after the first contact).
 *
 * No acceptance-check runner exists yet: a node of a pool with checks stays `adopting` until an operator
 * calls `nodes.adopt` (lifecycle.ts), which publishes `node.adopted`.
 */
export async function recordFirstContact(client: pg.ClientBase, nodeIds: readonly string[]): Promise<string[]> {
  // Plain SQL on the renewal's pg client, a measured hot path (docs/decisions/raw-sql-hot-paths.md): it runs in
  // the grouped renewal write's transaction, which Prisma does not hold. Named, so each pooled connection plans
  // it once: every renewal runs it, and after the first contact it only confirms that there is nothing to publish.
  const published = await client.query<{ type: string }>({ name: 'record-first-contact', text: RECORD_FIRST_CONTACT, values: [nodeIds] });
  return published.rows.map((row) => row.type);
}

import { sql, type ExpressionBuilder } from 'kysely';
import type { Tx } from '../db/client';
import type { DB } from '../db/generated/kysely/types';
import { typed } from '../db/typed';

// The stale-node policy's statements (server/pools/stale-policy.ts). A node is *disconnected* when it has no
// session row (a live or not yet swept session counts as connected) and its last session ended
// (`session_ended_at`, which a new session clears): a node that never had a session (a pool without bcd) is
// never stale.

type Nodes = ExpressionBuilder<DB & { n: DB['nodes'] }, 'n'>;

/** `compute_now()` less `days` whole days. */
const daysAgo = (days: number) => sql<Date>`compute_now() - make_interval(days => ${days}::int)`;

const disconnected = (eb: Nodes, poolId: string) => [
  eb('n.pool_id', '=', poolId),
  eb('n.state', '<>', 'retired'),
  eb('n.session_ended_at', 'is not', null),
  eb.not(eb.exists(eb.selectFrom('node_sessions as s').select(eb.lit(1).as('one')).whereRef('s.node_id', '=', 'n.id'))),
];

/**
 * Cordon: disconnected for `cordonAfterDays` (the boundary included), and not cordoned by the policy since its
 * last session ended. A node the policy cordoned and an operator uncordoned stays uncordoned until it connects
 * and leaves again.
 */
const cordonDue = (eb: Nodes, poolId: string, days: number) =>
  eb.and([
    ...disconnected(eb, poolId),
    eb('n.session_ended_at', '<=', daysAgo(days)),
    eb.or([eb('n.stale_cordoned_at', 'is', null), eb('n.stale_cordoned_at', '<', eb.ref('n.session_ended_at'))]),
  ]);

/**
 * Retire: cordoned by the policy `retireAfterDays` ago (the boundary included), still cordoned, and not connected
 * since (its last session ended before that cordon).
 */
const retireDue = (eb: Nodes, poolId: string, days: number) =>
  eb.and([
    ...disconnected(eb, poolId),
    eb.ref('n.cordoned'),
    eb('n.stale_cordoned_at', 'is not', null),
    eb('n.stale_cordoned_at', '>=', eb.ref('n.session_ended_at')),
    eb('n.stale_cordoned_at', '<=', daysAgo(days)),
  ]);

const STALE_DUE = { cordon: cordonDue, retire: retireDue } as const;
export type StaleAction = keyof typeof STALE_DUE;

/** The pool's nodes due for `action` after `days` (cordonAfterDays, retireAfterDays), by the database clock. */
function dueNodes(tx: Tx, poolId: string, action: StaleAction, days: number) {
  return typed(tx)
    .selectFrom('nodes as n')
    .where((eb) => STALE_DUE[action](eb, poolId, days));
}

/** The columns a step reads of a due node (whose last session ended: the predicate says so). */
const dueColumns = (query: ReturnType<typeof dueNodes>) =>
  query
    .select([
      'n.id',
      'n.tenant_id',
      'n.site_id',
      'n.claims',
      'n.cordoned',
      'n.session_ended_at',
      'n.stale_cordoned_at',
      sql<string | null>`${sql.ref('n.claims')}->>'hostname'`.as('hostname'),
    ])
    .$narrowType<{ session_ended_at: Date }>();

export type DueRow = Awaited<ReturnType<ReturnType<typeof dueColumns>['execute']>>[number];

/**
 * Up to `limit` nodes due for `action`, locked: a node another transaction holds (another instance's worker, a
 * Hello opening its session, an operator's change) is skipped, never waited for, so two workers never handle
 * one node, and the locked row is re-checked against the predicate once its holder commits.
 */
export function lockDue(tx: Tx, poolId: string, action: StaleAction, days: number, limit: number): Promise<DueRow[]> {
  return dueColumns(dueNodes(tx, poolId, action, days))
    .orderBy('n.id')
    .limit(limit)
    .forUpdate('n')
    .skipLocked()
    .execute();
}

/** The dry run: the first `limit` nodes due for `action`, in id order, unlocked. */
export function listDue(tx: Tx, poolId: string, action: StaleAction, days: number, limit: number): Promise<DueRow[]> {
  return dueColumns(dueNodes(tx, poolId, action, days))
    .orderBy('n.id')
    .limit(limit)
    .execute();
}

/** How many nodes are due for `action` now. */
export async function countDue(tx: Tx, poolId: string, action: StaleAction, days: number): Promise<number> {
  const row = await dueNodes(tx, poolId, action, days)
    .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('count'))
    .executeTakeFirstOrThrow();
  return row.count;
}

/** Cordons the locked nodes `ids` as the policy. */
export async function cordonStale(tx: Tx, ids: string[]): Promise<void> {
  if (!ids.length) return;
  await typed(tx)
    .updateTable('nodes')
    .set({ cordoned: true, stale_cordoned_at: sql<Date>`compute_now()`, updated_at: sql<Date>`compute_now()` })
    .where('id', 'in', ids)
    .execute();
}

/** The pools whose policy names `staleNodes` (of the tenants `tenantIds` only, when given), in id order. */
export function poolsWithPolicy(tx: Tx, tenantIds?: string[]) {
  let query = typed(tx)
    .selectFrom('pools')
    .select(['id', 'owner_tenant_id', sql<unknown>`${sql.ref('policy')}->'staleNodes'`.as('stale_nodes')])
    .where('policy', '?', 'staleNodes');
  if (tenantIds) query = query.where((eb) => eb('owner_tenant_id', '=', eb.fn.any(sql<string[]>`${tenantIds}::text[]`)));
  return query.orderBy('id').execute();
}

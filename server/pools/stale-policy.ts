import type { Db, Tx } from '../db/client';
import { typed } from '../db/typed';
import { resource } from '../authz/authorize';
import { publishEvent, writeAudit } from '../events/publish';
import { retireLockedNode } from '../nodes/lifecycle';
import { staleNodesPolicySchema, type StaleNodesPolicy } from '../../protocol/api/stale-nodes';
import { cordonStale, lockDue, poolsWithPolicy, type DueRow, type StaleAction } from './stale-sql';

/** The actor of the policy's audit rows. */
export const STALE_POLICY_ACTOR = 'policy:stale-nodes';
/** Nodes handled per transaction: each is a short one, so a Hello or an operator waits little. */
const STALE_BATCH = 50;

interface StaleRunOptions {
  /** Nodes per transaction. */
  batch?: number;
  /** The database clock for this run (`compute.now`), for tests; production leaves the database's own. */
  now?: Date;
}

export type StalePool = { id: string; tenantId: string; policy: StaleNodesPolicy };

/** A transaction that reads the clock `now` when given (tests move time this way), else the database's. */
export async function inClock<T>(db: Db, now: Date | undefined, work: (tx: Tx) => Promise<T>): Promise<T> {
  return db.$transaction(
    async (tx) => {
      if (now)
        await typed(tx)
          .selectNoFrom((eb) => eb.fn('set_config', [eb.val('compute.now'), eb.val(now.toISOString()), eb.val(true)]).as('now'))
          .execute();
      return work(tx);
    },
    { timeout: 60_000 },
  );
}

/** The days after which `action` is due under the pool's policy. */
export const dueDays = (pool: StalePool, action: StaleAction) =>
  action === 'cordon' ? pool.policy.cordonAfterDays : pool.policy.retireAfterDays;

async function record(tx: Tx, pool: StalePool, row: DueRow, type: string, data: Record<string, unknown>) {
  const disconnectedSince = row.session_ended_at.toISOString();
  await writeAudit(tx, {
    tenantId: row.tenant_id,
    actor: STALE_POLICY_ACTOR,
    action: type,
    resource: resource.node(row.id),
    data: { poolId: pool.id, disconnectedSince, policy: pool.policy, ...data },
  });
  await publishEvent(tx, {
    tenantId: row.tenant_id,
    type,
    data: { nodeId: row.id, poolId: pool.id, siteId: row.site_id, disconnectedSince, ...data },
  });
}

/** One batch of `action` on the pool's due nodes, in one transaction; how many it handled. */
async function stepBatch(db: Db, pool: StalePool, action: StaleAction, options: StaleRunOptions): Promise<number> {
  return inClock(db, options.now, async (tx) => {
    const rows = await lockDue(tx, pool.id, action, dueDays(pool, action), options.batch ?? STALE_BATCH);
    if (action === 'cordon') {
      await cordonStale(
        tx,
        rows.map((r) => r.id),
      );
      for (const row of rows) await record(tx, pool, row, 'node.stale.cordoned', { wasCordoned: row.cordoned });
    } else {
      for (const row of rows) {
        const { serials } = await retireLockedNode(tx, { id: row.id, tenantId: row.tenant_id, claims: row.claims });
        await record(tx, pool, row, 'node.stale.retired', { cordonedAt: row.stale_cordoned_at?.toISOString() ?? null, serials });
      }
    }
    return rows.length;
  });
}

/**
 * Applies one pool's stale-node policy now: retires the nodes due (cordoned by the policy `retireAfterDays` ago
 * and not connected since), then cordons those disconnected `cordonAfterDays`. Each node gets its event
 * (`node.stale.retired`, `node.stale.cordoned`) and an audit row as `policy:stale-nodes`. Instances may run it
 * at once: the rows are taken with SKIP LOCKED, so each node is handled by one of them, once.
 */
export async function applyPoolStalePolicy(db: Db, pool: StalePool, options: StaleRunOptions = {}) {
  const done = { cordoned: 0, retired: 0 };
  const batch = options.batch ?? STALE_BATCH;
  for (const [action, key] of [
    ['retire', 'retired'],
    ['cordon', 'cordoned'],
  ] as const) {
    for (;;) {
      const n = await stepBatch(db, pool, action, options);
      done[key] += n;
      if (n < batch) break;
    }
  }
  return done;
}

/** The pools with a stale-node policy (of `tenantIds` only, when given); a policy that no longer parses is skipped. */
async function stalePolicyPools(db: Tx, tenantIds?: string[]): Promise<StalePool[]> {
  const rows = await poolsWithPolicy(db, tenantIds);
  return rows.flatMap((row) => {
    const policy = staleNodesPolicySchema.safeParse(row.stale_nodes);
    return policy.success ? [{ id: row.id, tenantId: row.owner_tenant_id, policy: policy.data }] : [];
  });
}

/**
 * The worker's tick: applies every pool's stale-node policy (see {@link applyPoolStalePolicy}). `tenantIds`
 * scopes it (tests share one database). Returns the totals.
 */
export async function applyStalePolicies(db: Db, options: StaleRunOptions & { tenantIds?: string[] } = {}) {
  const totals = { pools: 0, cordoned: 0, retired: 0 };
  for (const pool of await stalePolicyPools(db, options.tenantIds)) {
    const done = await applyPoolStalePolicy(db, pool, options);
    totals.pools++;
    totals.cordoned += done.cordoned;
    totals.retired += done.retired;
  }
  return totals;
}

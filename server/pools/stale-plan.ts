import type { z } from 'zod';
import { sql } from 'kysely';
import type { Db, Tx } from '../db/client';
import { typed } from '../db/typed';
import { DomainError } from '../../protocol/errors';
import { resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { writeAudit } from '../events/publish';
import { loadPool, savePoolPolicy } from './pools';
import { applyPoolStalePolicy, dueDays, type StalePool } from './stale-policy';
import { countDue, listDue, type DueRow } from './stale-sql';
import {
  staleNodesPolicySchema,
  type setStaleNodesPolicyInput,
  type StaleNodesPlan,
  type StaleNodeStep,
  type staleNodesInput,
} from '../../protocol/api/stale-nodes';
import type { PoolPolicy } from '../../protocol/api/pool-schemas';

const DEFAULT_PLAN_LIMIT = 100;

const policyOf = (pool: { policy: unknown }) => {
  const parsed = staleNodesPolicySchema.safeParse(((pool.policy ?? {}) as PoolPolicy).staleNodes);
  return parsed.success ? parsed.data : null;
};

const toStep = (action: StaleNodeStep['action'], row: DueRow): StaleNodeStep => ({
  nodeId: row.id,
  hostname: row.hostname,
  action,
  disconnectedSince: row.session_ended_at.toISOString(),
  staleCordonedAt: row.stale_cordoned_at?.toISOString() ?? null,
});

/**
 * The dry run (`pools.staleNodes`, `compute:pools:read`): what the pool's stale-node policy would do if it ran
 * now, by the database clock: the retire steps first, then the cordon steps, at most `limit` (default 100) of
 * them listed and all of them counted. Changes nothing. A pool without a policy plans nothing.
 */
export async function planStaleNodes(db: Tx, principal: Principal, input: z.infer<typeof staleNodesInput>): Promise<StaleNodesPlan> {
  const pool = await loadPool(db as Db, principal, 'compute:pools:read', input);
  const policy = policyOf(pool);
  const { now } = await typed(db)
    .selectNoFrom(sql<Date>`compute_now()`.as('now'))
    .executeTakeFirstOrThrow();
  const plan: StaleNodesPlan = { poolId: pool.id, policy, evaluatedAt: now.toISOString(), counts: { cordon: 0, retire: 0 }, items: [] };
  if (!policy) return plan;
  const target: StalePool = { id: pool.id, tenantId: pool.ownerTenantId, policy };
  let room = input.limit ?? DEFAULT_PLAN_LIMIT;
  for (const action of ['retire', 'cordon'] as const) {
    const count = await countDue(db, pool.id, action, dueDays(target, action));
    plan.counts[action] = count;
    if (room > 0 && count > 0) {
      const rows = await listDue(db, pool.id, action, dueDays(target, action), room);
      plan.items.push(...rows.map((row) => toStep(action, row)));
      room -= rows.length;
    }
  }
  return plan;
}

/**
 * `pools.applyStaleNodes` (`compute:pools:manage`): runs the pool's stale-node policy now instead of at the
 * worker's next tick; the steps are the worker's (same events and audit rows, as `policy:stale-nodes`), and an
 * audit row names the operator who asked.
 */
export async function applyStaleNodesNow(db: Db, principal: Principal, input: z.infer<typeof staleNodesInput>) {
  const pool = await loadPool(db, principal, 'compute:pools:manage', input);
  const policy = policyOf(pool);
  if (!policy) throw new DomainError('INVALID_STATE', `Pool ${pool.id} has no stale-node policy (policy.staleNodes)`, { field: 'poolId' });
  const done = await applyPoolStalePolicy(db, { id: pool.id, tenantId: pool.ownerTenantId, policy });
  await writeAudit(db, {
    tenantId: pool.ownerTenantId,
    actor: principal.actor,
    action: 'pool.stale-nodes-applied',
    resource: resource.pool(pool.id),
    data: done,
  });
  return { poolId: pool.id, ...done };
}

/**
 * `pools.setStaleNodesPolicy` (`compute:pools:manage`): sets the pool's `policy.staleNodes`, or removes it with
 * `null` (the worker then leaves the pool's nodes alone; cordons it made stay). An archived pool's policy may only be
 * removed. Audited as `pool.updated`.
 */
export async function setStaleNodesPolicy(db: Db, principal: Principal, input: z.infer<typeof setStaleNodesPolicyInput>) {
  const pool = await loadPool(db, principal, 'compute:pools:manage', input);
  // An archived pool's nodes stay and its policy keeps applying to them: it may be removed, not set anew.
  if (pool.archivedAt && input.staleNodes)
    throw new DomainError('INVALID_STATE', `Pool ${pool.id} is archived; its stale-node policy can only be removed`, { field: 'poolId' });
  const { staleNodes: _previous, ...rest } = (pool.policy ?? {}) as PoolPolicy;
  const next: PoolPolicy = input.staleNodes ? { ...rest, staleNodes: input.staleNodes } : rest;
  return savePoolPolicy(db, principal, pool, next, { staleNodes: input.staleNodes });
}

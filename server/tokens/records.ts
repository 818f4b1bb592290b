import { sql, type ExpressionBuilder } from 'kysely';
import type { Tx } from '../db/client';
import type { DB } from '../db/generated/kysely/types';
import { typed } from '../db/typed';
import type { JoinTokenRecord, JoinTokenRole, JoinTokenState } from '../../protocol/api/token-schemas';

/** True for a live token (of `join_tokens`): not revoked, not expired by the database clock, a use left. */
export function liveToken(eb: ExpressionBuilder<DB, 'join_tokens'>) {
  return eb.and([eb('revoked_at', 'is', null), eb('expires_at', '>', sql<Date>`compute_now()`), eb('uses_left', '>', 0)]);
}

/** The email of the operator an actor (`operator:<id>`) names; null for any other actor. */
function operatorEmail(eb: ExpressionBuilder<DB, 'join_tokens'>, actor: 'join_tokens.created_by' | 'join_tokens.revoked_by') {
  return eb
    .selectFrom('operators as o')
    .select('o.email')
    .where((o) => o(sql<string>`'operator:' || ${o.ref('o.id')}`, '=', o.ref(actor)));
}

/**
 * The tokens' columns a record is built from, and the token's state decided by the database clock
 * (`compute_now()`), so expiry never depends on the clock of the process that asks; plus what idempotency
 * compares. The secret's hash is not among them: nothing read through here can leak it. Callers add the
 * condition, order and limit.
 */
export function joinTokenRecords(tx: Tx) {
  return typed(tx)
    .selectFrom('join_tokens')
    .select((eb) => [
      'id',
      'pool_id',
      'site_id',
      'role',
      'uses_left',
      'max_uses',
      'expect',
      'allow_reclaim',
      'hosted',
      'expires_at',
      'created_at',
      'revoked_at',
      'created_by',
      'last_used_at',
      'name',
      'description',
      'revoked_by',
      'labels',
      operatorEmail(eb, 'join_tokens.created_by').as('created_by_email'),
      operatorEmail(eb, 'join_tokens.revoked_by').where('join_tokens.revoked_by', 'is not', null).as('revoked_by_email'),
      eb
        .case()
        .when('revoked_at', 'is not', null)
        .then(sql.lit('revoked'))
        .when('expires_at', '<=', sql<Date>`compute_now()`)
        .then(sql.lit('expired'))
        .when('uses_left', '<=', 0)
        .then(sql.lit('used-up'))
        .else(sql.lit('live'))
        .end()
        .as('state'),
      'tenant_id',
      'bound_mac',
      // A `provisioned` token's one node.
      'node_id',
    ])
    .$narrowType<{ expect: Record<string, string> | null; labels: Record<string, string> | null }>();
}

/** A join_tokens row as joinTokenRecords reads it. */
export type StoredJoinToken = Awaited<ReturnType<ReturnType<typeof joinTokenRecords>['execute']>>[number];

export function toJoinTokenRecord(row: StoredJoinToken): JoinTokenRecord {
  return {
    id: row.id,
    poolId: row.pool_id,
    siteId: row.site_id,
    role: row.role as JoinTokenRole,
    usesLeft: row.uses_left,
    maxUses: row.max_uses,
    expect: row.expect ?? null,
    allowReclaim: row.allow_reclaim,
    hosted: (row.hosted as JoinTokenRecord['hosted']) ?? null,
    expiresAt: row.expires_at.toISOString(),
    createdAt: row.created_at.toISOString(),
    revokedAt: row.revoked_at?.toISOString() ?? null,
    revokedBy: row.revoked_by,
    revokedByEmail: row.revoked_by_email,
    name: row.name,
    description: row.description,
    createdBy: row.created_by,
    createdByEmail: row.created_by_email,
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
    state: row.state as JoinTokenState,
    labels: row.labels ?? {},
  };
}

/** One token by id, or null. */
export async function selectJoinToken(tx: Tx, id: string): Promise<StoredJoinToken | null> {
  return (await joinTokenRecords(tx).where('id', '=', id).executeTakeFirst()) ?? null;
}

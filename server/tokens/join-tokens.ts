import type { z } from 'zod';
import { sql } from 'kysely';
import type { Db } from '../db/client';
import { typed } from '../db/typed';
import { DomainError } from '../../protocol/errors';
import type { Principal } from '../authz/principal';
import { publishEvent, writeAudit } from '../events/publish';
import { loadPool } from '../pools/pools';
import { issueJoinToken } from './issue';
import { joinTokenRecords, liveToken, selectJoinToken, toJoinTokenRecord } from './records';
import {
  createJoinTokenInput,
  listJoinTokensInput,
  revokeJoinTokenInput,
  TOKEN_LIMITS,
  type CreatedJoinToken,
  type JoinTokenPage,
  type JoinTokenRecord,
} from '../../protocol/api/token-schemas';

/**
 * `joinTokens.create`: mints a `node` token for a pool, decided as `compute:join-tokens:create` on
 * `compute-pool/{poolId}` (another tenant's pool, or an unknown one, is NOT_FOUND). The pool must be live
 * and run the daemon (`agent: 'bcd'`), else INVALID_STATE. Defaults: maxUses 1, allowReclaim false, no
 * expect, not hosted. The idempotency key is scoped to the tenant and the calling identity
 * (`principal.actor`): a retry returns the record without `token` (see issueJoinToken for what conflicts).
 * The answer is the only place the bearer token ever appears.
 */
export async function createJoinToken(
  db: Db,
  principal: Principal,
  input: z.infer<typeof createJoinTokenInput>,
): Promise<CreatedJoinToken> {
  const pool = await loadPool(db, principal, 'compute:join-tokens:create', { tenantId: input.tenantId, poolId: input.poolId });
  if (pool.archivedAt) throw new DomainError('INVALID_STATE', `Pool ${pool.id} is archived: no machine can join it`, { field: 'poolId' });
  if (pool.agent !== 'bcd') {
    throw new DomainError(
      'INVALID_STATE',
      `Pool ${pool.id} has agent '${pool.agent}': its machines run no daemon, so none can join with a token`,
      { field: 'poolId' },
    );
  }
  const { record, token } = await db.$transaction((tx) =>
    issueJoinToken(tx, {
      tenantId: pool.ownerTenantId,
      poolId: pool.id,
      siteId: pool.siteId,
      role: 'node',
      ttlSeconds: input.ttlSeconds,
      maxUses: input.maxUses,
      expect: input.expect ?? null,
      allowReclaim: input.allowReclaim,
      hosted: input.hosted ?? null,
      createdBy: principal.actor,
      idempotencyKey: input.idempotencyKey,
      name: input.name ?? null,
      description: input.description ?? null,
      labels: input.labels ?? {},
    }),
  );
  return token === undefined ? record : { ...record, token };
}

/**
 * `joinTokens.list` (`compute:join-tokens:read`): a pool's live tokens (not revoked, not expired by the
 * database clock, a use left), newest first; `includeInactive` adds revoked, expired and used-up ones.
 * Pages of `limit` (1 to 200, default 100); `nextCursor` is the id of the page's last token.
 */
export async function listJoinTokens(db: Db, principal: Principal, input: z.infer<typeof listJoinTokensInput>): Promise<JoinTokenPage> {
  const pool = await loadPool(db, principal, 'compute:join-tokens:read', { tenantId: input.tenantId, poolId: input.poolId });
  const limit = input.limit ?? TOKEN_LIMITS.list.default;
  let query = joinTokenRecords(db).where('tenant_id', '=', pool.ownerTenantId).where('pool_id', '=', pool.id);
  if (!input.includeInactive) query = query.where(liveToken);
  if (input.cursor) {
    const anchor = await db.joinToken.findFirst({
      where: { id: input.cursor, poolId: pool.id, tenantId: pool.ownerTenantId },
      select: { id: true },
    });
    if (!anchor)
      throw new DomainError('INVALID_ARGUMENT', 'cursor: not a token of this pool; pass the nextCursor of a previous page', {
        field: 'cursor',
      });
    // Keyset on (created_at, id), read from the row itself so the comparison keeps microseconds.
    query = query.where((eb) =>
      eb(
        eb.refTuple('created_at', 'id'),
        '<',
        eb.selectFrom('join_tokens as a').select(['a.created_at', 'a.id']).where('a.id', '=', anchor.id).$asTuple('created_at', 'id'),
      ),
    );
  }
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const page = rows.slice(0, limit).map(toJoinTokenRecord);
  return { items: page, nextCursor: rows.length > limit ? page[page.length - 1]!.id : null };
}

/**
 * `joinTokens.revoke` (`compute:join-tokens:revoke`): ends a token at once. Revoking a revoked token
 * returns it unchanged; only the revocation that ends it publishes `security.join-token.revoked` and
 * writes the audit row, even when two revocations race.
 */
export async function revokeJoinToken(db: Db, principal: Principal, input: z.infer<typeof revokeJoinTokenInput>): Promise<JoinTokenRecord> {
  const pool = await loadPool(db, principal, 'compute:join-tokens:revoke', { tenantId: input.tenantId, poolId: input.poolId });
  return db.$transaction(async (tx) => {
    const ended = await typed(tx)
      .updateTable('join_tokens')
      .set({ revoked_at: sql<Date>`compute_now()`, revoked_by: principal.actor })
      .where('id', '=', input.tokenId)
      .where('tenant_id', '=', pool.ownerTenantId)
      .where('pool_id', '=', pool.id)
      .where('revoked_at', 'is', null)
      .returning('id')
      .execute();
    const row = await selectJoinToken(tx, input.tokenId);
    if (!row || row.tenant_id !== pool.ownerTenantId || row.pool_id !== pool.id) {
      throw new DomainError('NOT_FOUND', `Join token ${input.tokenId} not found in pool ${pool.id}`);
    }
    const record = toJoinTokenRecord(row);
    if (ended.length === 1) {
      const data = { tokenId: record.id, poolId: record.poolId, siteId: record.siteId, role: record.role, actor: principal.actor };
      await publishEvent(tx, { tenantId: pool.ownerTenantId, type: 'security.join-token.revoked', data });
      await writeAudit(tx, {
        tenantId: pool.ownerTenantId,
        actor: principal.actor,
        action: 'join-token.revoked',
        resource: `compute-join-token/${record.id}`,
        data,
      });
    }
    return record;
  });
}

import type { z } from 'zod';
import type { Db } from '../db/client';
import { Prisma } from '../db/generated/client';
import { DomainError } from '../../protocol/errors';
import type { Principal } from '../authz/principal';
import { loadPool } from '../pools/pools';
import { decideStatement } from './decide-statement';
import { REQUIRED_APPROVALS, approveStatement, secondApprovalScanGuard } from './approve-statement';
import { approvableGuard, approvableScanGuard, assertApprovable } from './approvable';
import { RECORD_COLUMNS, selectJoinRequest, toJoinRequestRecord, visibleTo, type JoinRequestRow } from './records';
import {
  approveJoinRequestInput,
  approveJoinRequestsInput,
  rejectJoinRequestInput,
  rejectJoinRequestsInput,
  type ApprovedJoinRequests,
  type JoinRequestRecord,
  type RejectedJoinRequests,
} from '../../protocol/api/join-request-schemas';
import { countMatching, selectMatchingPage } from './bulk';
import { samePersonActors } from './same-person-sql';

/**
 * Approves pending requests into the pool for `ttlSeconds` (60 to 86,400, default 3,600), one statement
 * per call whatever the number of ids (at most 200). Decided as `compute:join-requests:decide` on the pool;
 * an archived pool, or one that runs no daemon, is INVALID_STATE, and so is any approval whose retry would
 * certainly be refused (see assertApprovable: the pool's joinAttestors, the request token's state, tenant and
 * site). A request this pool already approved (two operators at once, a retried call) counts as approved;
 * any other is `skipped`. With `matching` instead of ids, the call takes the next 200 pending requests (oldest
 * first) that match the filter and asked by `createdUpTo`, skipping those the pool would refuse on retry, and
 * answers how many still match (`remaining`): the caller repeats until it is 0.
 *
 * On a site with `requiredApprovals` 2, the first approval of a request is only recorded (`recorded`: who,
 * when, into which pool; still pending, 1 of 2); another person's approval into the same pool admits it. A key
 * acts as the person who created it: the same person approving again, by session or any of their keys, stays
 * 1 of 2 (`recorded` again); a second approval into another pool
 * is INVALID_STATE naming the first approver's pool (by ids, before anything is decided; by filter such
 * requests are not chosen).
 */
export async function approveJoinRequests(
  db: Db,
  principal: Principal,
  valid: z.infer<typeof approveJoinRequestsInput>,
): Promise<ApprovedJoinRequests> {
  const pool = await loadPool(db, principal, 'compute:join-requests:decide', valid);
  if (pool.archivedAt) throw new DomainError('INVALID_STATE', `Pool ${pool.id} is archived: no machine can join it`, { field: 'poolId' });
  if (pool.agent !== 'bcd')
    throw new DomainError('INVALID_STATE', `Pool ${pool.id} runs no daemon: no machine can join it`, { field: 'poolId' });
  const visible = visibleTo(pool);
  const guard = Prisma.sql`${approvableGuard(pool)}`;
  // By filter, only requests whose retry the pool would admit, and that this caller may approve, are chosen.
  const selectable = Prisma.sql`${approvableScanGuard(pool)} AND ${secondApprovalScanGuard(principal.actor, pool.id)}`;
  // By id, a request whose retry would be refused, or whose first approval chose another pool, refuses the call.
  const ids = valid.matching ? await selectMatchingPage(db, pool, valid.matching, selectable) : [...new Set(valid.requestIds!)];
  if (!ids.length) return { approved: [], recorded: [], skipped: [], remaining: 0 };
  if (!valid.matching) {
    await assertApprovable(db, pool, ids, visible);
    await assertSamePool(db, pool.id, ids, visible);
  }
  const rows = await db.$queryRaw<JoinRequestRow[]>(
    approveStatement(ids, visible, principal.actor, pool.id, valid.reason ?? null, valid.ttlSeconds, guard, valid.labels ?? {}),
  );
  const approved = rows.filter((r) => r.state === 'approved').map(toJoinRequestRecord);
  const recorded = rows.filter((r) => r.state !== 'approved').map(toJoinRequestRecord);
  const done = new Set(rows.map((r) => r.id));
  const rest = ids.filter((id) => !done.has(id));
  const skipped: string[] = [];
  if (rest.length) {
    const others = await db.$queryRaw<
      JoinRequestRow[]
    >`SELECT ${RECORD_COLUMNS} FROM join_requests WHERE id = ANY(${rest}::text[]) AND ${visible}`;
    const byId = new Map(others.map((r) => [r.id, r]));
    const mine = await identitiesOf(db, principal.actor);
    for (const id of rest) {
      const row = byId.get(id);
      // The other operator's approval into this pool is the answer this call would have given.
      if (row && row.state === 'approved' && row.pool_id === pool.id) approved.push(toJoinRequestRecord(row));
      // This caller's own first approval (by session or any of their keys), recorded before: still 1 of 2.
      else if (row && row.state === 'pending' && row.first_approved_by && mine.has(row.first_approved_by))
        recorded.push(toJoinRequestRecord(row));
      else skipped.push(id);
    }
  }
  const remaining = valid.matching ? await countMatching(db, pool, valid.matching, selectable) : 0;
  return { approved, recorded, skipped, remaining };
}

/** The actors that are the same person as `actor` (their session and every key minted under them). */
async function identitiesOf(db: Db, actor: string): Promise<Set<string>> {
  const rows = await db.$queryRaw<{ actor: string }[]>`SELECT actor FROM ${samePersonActors(actor)} AS person`;
  return new Set(rows.map((r) => r.actor));
}

/** Refuses (INVALID_STATE) a second approval into another pool than the first approver chose. */
async function assertSamePool(db: Db, poolId: string, ids: string[], visible: Prisma.Sql): Promise<void> {
  const [other] = await db.$queryRaw<JoinRequestRow[]>`
    SELECT ${RECORD_COLUMNS} FROM join_requests
     WHERE id = ANY(${ids}::text[]) AND ${visible} AND state = 'pending' AND expires_at > compute_now()
       AND ${REQUIRED_APPROVALS} >= 2 AND first_approval_pool_id IS DISTINCT FROM ${poolId} AND first_approved_by IS NOT NULL
     ORDER BY id LIMIT 1`;
  if (other) throw otherPool(other, poolId);
}

const otherPool = (row: JoinRequestRow, poolId: string) =>
  new DomainError(
    'INVALID_STATE',
    `Join request ${row.id} needs two approvals into one pool: ${row.first_approved_by_name ?? row.first_approved_by} approved it into pool ${row.first_approval_pool_id}, not ${poolId}. Approve it into ${row.first_approval_pool_id}, or reject it`,
    { field: 'poolId' },
  );

/**
 * `joinRequests.approve`: the request admits one join (the retry with its CSR) into the pool until the
 * approval expires. Approving twice returns the approval; any other decided state is INVALID_STATE. On a
 * two-person site the first approval answers the request still pending with `firstApproval` set.
 */
export async function approveJoinRequest(
  db: Db,
  principal: Principal,
  valid: z.infer<typeof approveJoinRequestInput>,
): Promise<JoinRequestRecord> {
  const { requestId, ...rest } = valid;
  const { approved, recorded } = await approveJoinRequests(db, principal, { ...rest, requestIds: [requestId] });
  const answer = approved[0] ?? recorded[0];
  if (answer) return answer;
  throw await undecidable(db, principal, valid, 'approve');
}

/**
 * `joinRequests.rejectMany`: rejects the named requests (pending, or approved and unused), or with `matching`
 * the next 200 pending requests that match the filter (as approveMany), in one statement. Already rejected
 * ones count as rejected; any other is `skipped`.
 */
export async function rejectJoinRequests(
  db: Db,
  principal: Principal,
  valid: z.infer<typeof rejectJoinRequestsInput>,
): Promise<RejectedJoinRequests> {
  const pool = await loadPool(db, principal, 'compute:join-requests:decide', valid);
  const visible = visibleTo(pool);
  const ids = valid.matching ? await selectMatchingPage(db, pool, valid.matching, Prisma.sql`TRUE`) : [...new Set(valid.requestIds!)];
  if (!ids.length) return { rejected: [], skipped: [], remaining: 0 };
  const rows = await db.$queryRaw<JoinRequestRow[]>(
    decideStatement(
      'rejected',
      ids,
      visible,
      principal.actor,
      Prisma.sql`pool_id = ${pool.id}, reason = ${valid.reason}`,
      valid.matching
        ? Prisma.sql`state = 'pending' AND expires_at > compute_now()`
        : Prisma.sql`state IN ('pending', 'approved') AND expires_at > compute_now()`,
    ),
  );
  const rejected = rows.map(toJoinRequestRecord);
  const done = new Set(rejected.map((r) => r.id));
  const rest = ids.filter((id) => !done.has(id));
  const skipped: string[] = [];
  if (rest.length) {
    const others = await db.$queryRaw<
      JoinRequestRow[]
    >`SELECT ${RECORD_COLUMNS} FROM join_requests WHERE id = ANY(${rest}::text[]) AND ${visible}`;
    const byId = new Map(others.map((r) => [r.id, r]));
    for (const id of rest) {
      const row = byId.get(id);
      if (row?.state === 'rejected') rejected.push(toJoinRequestRecord(row));
      else skipped.push(id);
    }
  }
  const remaining = valid.matching ? await countMatching(db, pool, valid.matching, Prisma.sql`TRUE`) : 0;
  return { rejected, skipped, remaining };
}

/**
 * `joinRequests.reject`: final. It also withdraws an approval the machine has not used yet. Rejecting a
 * rejected request returns it; a consumed or expired one is INVALID_STATE.
 */
export async function rejectJoinRequest(
  db: Db,
  principal: Principal,
  valid: z.infer<typeof rejectJoinRequestInput>,
): Promise<JoinRequestRecord> {
  const pool = await loadPool(db, principal, 'compute:join-requests:decide', valid);
  const visible = visibleTo(pool);
  const [row] = await db.$queryRaw<JoinRequestRow[]>(
    decideStatement(
      'rejected',
      [valid.requestId],
      visible,
      principal.actor,
      Prisma.sql`pool_id = ${pool.id}, reason = ${valid.reason}`,
      Prisma.sql`state IN ('pending', 'approved') AND expires_at > compute_now()`,
    ),
  );
  if (row) return toJoinRequestRecord(row);
  const current = await selectJoinRequest(db, valid.requestId, visible);
  if (current?.state === 'rejected') return toJoinRequestRecord(current);
  throw await undecidable(db, principal, valid, 'reject');
}

/** Why a decision found nothing to decide: NOT_FOUND when the pool cannot see it, else INVALID_STATE. */
async function undecidable(db: Db, principal: Principal, ref: { tenantId: string; poolId: string; requestId: string }, verb: string) {
  const pool = await loadPool(db, principal, 'compute:join-tokens:read', ref);
  const row = await selectJoinRequest(db, ref.requestId, visibleTo(pool));
  if (!row) return new DomainError('NOT_FOUND', `Join request ${ref.requestId} not found`);
  // Still pending: its token went bad between the check and the approving statement; say why.
  if (verb === 'approve' && row.state === 'pending') {
    if (row.first_approved_by && row.first_approval_pool_id !== ref.poolId) return otherPool(row, ref.poolId);
    const refused = await assertApprovable(db, pool, [row.id], visibleTo(pool)).catch((error: unknown) => error);
    if (refused instanceof DomainError) return refused;
  }
  return new DomainError(
    'INVALID_STATE',
    `Join request ${ref.requestId} is ${row.state}: it cannot be ${verb === 'approve' ? 'approved' : 'rejected'}`,
    {
      field: 'requestId',
    },
  );
}

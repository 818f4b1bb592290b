import type { Db } from '../db/client';
import { Prisma } from '../db/generated/client';
import { DomainError } from '../../protocol/errors';
import type { PoolPolicy } from '../../protocol/api/pool-schemas';
import { NOW_ONCE } from './records';

/** The pool an approval would admit into, as loadPool read it. */
interface ApprovalPool {
  id: string;
  siteId: string;
  ownerTenantId: string;
  policy: unknown;
}

interface PendingRow {
  id: string;
  attestor: string;
  token_id: string | null;
  token_found: boolean;
  token_revoked: boolean;
  token_expired: boolean;
  token_uses_left: number | null;
  token_site: string | null;
  token_tenant: string | null;
}

/** The attestors the pool admits (`policy.joinAttestors`); null admits every attestor. */
const admittedAttestors = (pool: ApprovalPool): readonly string[] | null => ((pool.policy ?? {}) as PoolPolicy).joinAttestors ?? null;

/**
 * Why the approved retry of this request would certainly be refused, in the order the join checks it
 * (the request's token, then the pool rules of decide.ts `checkPool`); null when it would be admitted.
 */
function refusalOf(pool: ApprovalPool, row: PendingRow): { message: string; field: 'requestId' | 'poolId' } | null {
  const request = `join request ${row.id}`;
  const reboot = 'the machine must boot again to ask with a new token';
  if (row.token_id !== null) {
    if (!row.token_found) return { field: 'requestId', message: `The token of ${request} no longer exists: ${reboot}` };
    if (row.token_revoked)
      return { field: 'requestId', message: `The token of ${request} is revoked, so its retry would be refused: ${reboot}` };
    if (row.token_expired)
      return { field: 'requestId', message: `The token of ${request} has expired, so its retry would be refused: ${reboot}` };
    if ((row.token_uses_left ?? 0) <= 0)
      return { field: 'requestId', message: `The token of ${request} is used up, so its retry would be refused: ${reboot}` };
    if (row.token_tenant !== pool.ownerTenantId)
      return {
        field: 'poolId',
        message: `Pool ${pool.id} belongs to another tenant than the token of ${request}: its retry would be refused`,
      };
    if (row.token_site !== pool.siteId)
      return {
        field: 'poolId',
        message: `Pool ${pool.id} is in site ${pool.siteId}, but ${request} came with a token of site ${row.token_site}: its retry would be refused`,
      };
  }
  const allowed = admittedAttestors(pool);
  if (allowed && !allowed.includes(row.attestor)) {
    return {
      field: 'poolId',
      message: `Pool ${pool.id} admits only ${allowed.join(', ')} joins (policy.joinAttestors), so the ${row.attestor} retry of ${request} would be refused: choose a pool that admits ${row.attestor}`,
    };
  }
  return null;
}

/**
 * Refuses (INVALID_STATE, naming the reason) an approval whose retry would certainly be refused: the
 * request's token is gone, revoked, expired or used up, or belongs to another tenant or site than the pool,
 * or the pool's `policy.joinAttestors` excludes the request's attestor. Only the pending requests among
 * `ids` that the pool sees are checked (the others are decided as before). All or nothing: one such
 * request refuses the whole call, so nothing is approved that the operator did not mean to approve alone.
 */
export async function assertApprovable(db: Db, pool: ApprovalPool, ids: string[], visible: Prisma.Sql): Promise<void> {
  const rows = await db.$queryRaw<PendingRow[]>`
    SELECT r.id, r.attestor, r.token_id, t.id IS NOT NULL AS token_found, t.revoked_at IS NOT NULL AS token_revoked,
           t.expires_at <= compute_now() AS token_expired, t.uses_left AS token_uses_left, t.site_id AS token_site, t.tenant_id AS token_tenant
      FROM (SELECT * FROM join_requests WHERE id = ANY(${ids}::text[]) AND ${visible} AND state = 'pending' AND expires_at > compute_now()) r
      LEFT JOIN join_tokens t ON t.id = r.token_id
     ORDER BY r.id`;
  const refused = rows.flatMap((row) => {
    const refusal = refusalOf(pool, row);
    return refusal ? [refusal] : [];
  });
  const [first] = refused;
  if (!first) return;
  const more = refused.length > 1 ? ` (and ${refused.length - 1} more of these requests)` : '';
  throw new DomainError('INVALID_STATE', `${first.message}${more}`, { field: first.field });
}

/**
 * The same rules as approvableGuard for a scan over the queue (a bulk decision by filter choosing its page and
 * counting what remains): the site's live tokens are read once into a hash (join_tokens_site_live) instead of
 * a token probed per request, which at 10,000 pending requests cost most of each page's time.
 */
export function approvableScanGuard(pool: ApprovalPool): Prisma.Sql {
  const allowed = admittedAttestors(pool);
  return Prisma.sql`${allowed ? Prisma.sql`attestor = ANY(${[...allowed]}::text[])` : Prisma.sql`TRUE`}
    AND (join_requests.token_id IS NULL OR join_requests.token_id IN (
      SELECT t.id FROM join_tokens t
       WHERE t.site_id = ${pool.siteId} AND t.revoked_at IS NULL AND t.expires_at > ${NOW_ONCE} AND t.uses_left > 0
         AND t.tenant_id = ${pool.ownerTenantId}))`;
}

/**
 * The same rules as a guard inside the approving UPDATE, so that a token revoked between the check and the
 * statement is not approved either (that request is then `skipped`).
 */
export function approvableGuard(pool: ApprovalPool): Prisma.Sql {
  const allowed = admittedAttestors(pool);
  return Prisma.sql`${allowed ? Prisma.sql`attestor = ANY(${[...allowed]}::text[])` : Prisma.sql`TRUE`}
    AND (join_requests.token_id IS NULL OR EXISTS (
      SELECT 1 FROM join_tokens t
       WHERE t.id = join_requests.token_id AND t.revoked_at IS NULL AND t.expires_at > compute_now() AND t.uses_left > 0
         AND t.tenant_id = ${pool.ownerTenantId} AND t.site_id = ${pool.siteId}))`;
}

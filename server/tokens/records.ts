import type { Tx } from '../db/client';
import { Prisma } from '../db/generated/client';
import type { JoinTokenRecord, JoinTokenRole, JoinTokenState } from '../../protocol/api/token-schemas';

/**
 * The columns a record is built from, and the token's state decided by the database clock
 * (`compute_now()`), so expiry never depends on the clock of the process that asks. The secret's hash is
 * not among them: nothing read through here can leak it.
 */
const RECORD_COLUMNS = Prisma.sql`
  id, pool_id, site_id, role, uses_left, max_uses, expect, allow_reclaim, hosted, expires_at, created_at, revoked_at,
  created_by, last_used_at, name, description, revoked_by, labels,
  (SELECT o.email FROM operators o WHERE 'operator:' || o.id = join_tokens.created_by) AS created_by_email,
  (SELECT o.email FROM operators o WHERE join_tokens.revoked_by IS NOT NULL AND 'operator:' || o.id = join_tokens.revoked_by) AS revoked_by_email,
  CASE
    WHEN revoked_at IS NOT NULL THEN 'revoked'
    WHEN expires_at <= compute_now() THEN 'expired'
    WHEN uses_left <= 0 THEN 'used-up'
    ELSE 'live'
  END AS state`;

/** SQL that is true for a live token: not revoked, not expired, with a use left. */
export const LIVE_CONDITION = Prisma.sql`revoked_at IS NULL AND expires_at > compute_now() AND uses_left > 0`;

/** A join_tokens row as RECORD_COLUMNS reads it, plus what idempotency compares. */
interface JoinTokenRow {
  id: string;
  pool_id: string | null;
  site_id: string;
  role: string;
  uses_left: number;
  max_uses: number;
  expect: Record<string, string> | null;
  allow_reclaim: boolean;
  hosted: string | null;
  expires_at: Date;
  created_at: Date;
  revoked_at: Date | null;
  created_by: string;
  last_used_at: Date | null;
  created_by_email: string | null;
  name: string | null;
  description: string | null;
  revoked_by: string | null;
  revoked_by_email: string | null;
  state: string;
  labels: Record<string, string> | null;
}

export interface StoredJoinToken extends JoinTokenRow {
  tenant_id: string;
  bound_mac: string | null;
  /** A `provisioned` token's one node. */
  node_id: string | null;
}

export function toJoinTokenRecord(row: JoinTokenRow): JoinTokenRecord {
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

/** Reads tokens matching `where` (a SQL condition), with their state; `tail` adds ORDER BY / LIMIT. */
export async function selectJoinTokens(tx: Tx, where: Prisma.Sql, tail: Prisma.Sql = Prisma.empty): Promise<StoredJoinToken[]> {
  return tx.$queryRaw<StoredJoinToken[]>`
    SELECT ${RECORD_COLUMNS}, tenant_id, bound_mac, node_id FROM join_tokens WHERE ${where} ${tail}`;
}

/** One token by id, or null. */
export async function selectJoinToken(tx: Tx, id: string): Promise<StoredJoinToken | null> {
  const [row] = await selectJoinTokens(tx, Prisma.sql`id = ${id}`);
  return row ?? null;
}

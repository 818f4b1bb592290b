import type { Tx } from '../db/client';
import { Prisma } from '../db/generated/client';
import type { HardwareIdentifiers } from '../../protocol/hardware-claims';
import { deriveHardwareKey } from '../join/hardware/hardware-key';
import type { JoinRequestRecord, JoinRequestState } from '../../protocol/api/join-request-schemas';
import { requestFieldsOf } from '../join/attestors';

/**
 * Whether the request's hardware key is trusted (joining.md: at least two independent identifiers survive,
 * one of them a serial or the product UUID: the rule the join applies to the node's key).
 * A key is stored whenever one identifier survives, so its presence alone says nothing; the key was derived
 * from these same claims, so deriving it again gives its trust. Claims were validated at the join.
 */
function isHardwareKeyTrusted(claims: Record<string, unknown>): boolean {
  try {
    const key = deriveHardwareKey(claims as HardwareIdentifiers);
    return key.trusted && key.hasUuidOrSerial;
  } catch {
    return false;
  }
}

/**
 * The database's clock read once per statement (an InitPlan), for conditions a scan evaluates on every row:
 * `compute_now()` itself is STABLE, not constant, so PostgreSQL would read the setting and cast it again for
 * each of 10,000 rows (about half of a count's time).
 */
export const NOW_ONCE = Prisma.sql`(SELECT compute_now())`;

/** The state a request reads as: pending or approved past its expiry (database clock) is `expired`. */
const EFFECTIVE_STATE = Prisma.sql`CASE WHEN state IN ('pending', 'approved') AND expires_at <= compute_now() THEN 'expired' ELSE state END`;

export const RECORD_COLUMNS = Prisma.sql`
  id, ${EFFECTIVE_STATE} AS state, attestor, claims, hardware_key, mac, ip, workflow_id, vouched_by, boot_lease_epoch, csr_sha256,
  site_id, created_at, expires_at, decided_at, decided_by, reason, pool_id, consumed_at, tenant_id, hardware_key_trusted, node_id, tpm, ek_certified, client_address,
  (SELECT COALESCE(NULLIF(o.name, ''), o.email) FROM operators o
    WHERE decided_by LIKE 'operator:%' AND o.id = substr(decided_by, 10)) AS decided_by_name,
  first_approved_by, first_approved_at, first_approval_pool_id,
  (SELECT COALESCE(NULLIF(o.name, ''), o.email) FROM operators o
    WHERE first_approved_by LIKE 'operator:%' AND o.id = substr(first_approved_by, 10)) AS first_approved_by_name,
  (SELECT s.required_approvals FROM sites s WHERE s.id = site_id) AS required_approvals`;

export interface JoinRequestRow {
  id: string;
  state: string;
  attestor: string;
  claims: Record<string, unknown>;
  hardware_key: Buffer | Uint8Array | null;
  mac: string | null;
  ip: string | null;
  workflow_id: string | null;
  vouched_by: string | null;
  boot_lease_epoch: bigint | number | null;
  csr_sha256: string;
  site_id: string;
  created_at: Date;
  expires_at: Date;
  decided_at: Date | null;
  decided_by: string | null;
  /** The deciding operator's name (else email), resolved in the same statement; null for other actors. */
  decided_by_name: string | null;
  reason: string | null;
  pool_id: string | null;
  consumed_at: Date | null;
  tenant_id: string | null;
  /** Written by the join since the column exists; null on older rows. */
  hardware_key_trusted: boolean | null;
  node_id: string | null;
  client_address: string | null;
  /** A tpm enrollment's facts (tpmRequestFacts); null for other attestors. */
  tpm: unknown;
  /** Written by the tpm attestor (and backfilled from `tpm`); null for other attestors. */
  ek_certified: boolean | null;
  first_approved_by: string | null;
  first_approved_at: Date | null;
  first_approval_pool_id: string | null;
  first_approved_by_name: string | null;
  required_approvals: number | null;
}

/**
 * Who decided, as the console shows it: the operator's name (else email), `rule <name>` for a request an
 * approval rule decided (its name when it decided, kept in `reason`), `import <id>` for an expected machine.
 */
export function decidedByLabel(decidedBy: string | null, operatorName: string | null, reason: string | null): string | null {
  if (operatorName) return operatorName;
  if (decidedBy?.startsWith('rule:')) return `rule ${reason ?? decidedBy.slice(5)}`;
  if (decidedBy?.startsWith('import:')) return `import ${decidedBy.slice(7)}`;
  return null;
}

export function toJoinRequestRecord(row: JoinRequestRow): JoinRequestRecord {
  // The fields its attestor shows (a tpm enrollment's facts), null for every other attestor's request.
  const own = requestFieldsOf(row);
  return {
    id: row.id,
    state: row.state as JoinRequestState,
    attestor: row.attestor,
    claims: row.claims ?? {},
    hardwareKey: row.hardware_key ? Buffer.from(row.hardware_key).toString('hex') : null,
    hardwareKeyTrusted: row.hardware_key ? (row.hardware_key_trusted ?? isHardwareKeyTrusted(row.claims ?? {})) : false,
    mac: row.mac,
    ip: row.ip,
    workflowId: row.workflow_id,
    vouchedBy: row.vouched_by,
    bootLeaseEpoch: row.boot_lease_epoch === null ? null : Number(row.boot_lease_epoch),
    csrSha256: row.csr_sha256,
    siteId: row.site_id,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    decidedAt: row.decided_at?.toISOString() ?? null,
    decidedBy: row.decided_by,
    decidedByName: decidedByLabel(row.decided_by, row.decided_by_name, row.reason),
    reason: row.reason,
    poolId: row.pool_id,
    consumedAt: row.consumed_at?.toISOString() ?? null,
    nodeId: row.node_id,
    clientAddress: row.client_address ?? null,
    tpm: own.tpm,
    ekCertified: own.ekCertified,
    requiredApprovals: Number(row.required_approvals ?? 1) >= 2 ? 2 : 1,
    firstApproval: row.first_approved_by
      ? {
          by: row.first_approved_by,
          byName: row.first_approved_by_name ?? null,
          at: row.first_approved_at!.toISOString(),
          poolId: row.first_approval_pool_id,
        }
      : null,
    approvals: approvalsOf(row),
  };
}

/** The approvals a request holds: its recorded first approval, and the deciding one unless it was a rejection. */
function approvalsOf(row: JoinRequestRow): number {
  const decidedApproval = row.decided_by !== null && row.state !== 'rejected' && row.state !== 'pending' ? 1 : 0;
  return Math.min(2, (row.first_approved_by ? 1 : 0) + decidedApproval);
}

/** SQL: the row is a tpm enrollment whose EK is not vendor-certified (the `ek_certified` column the tpm attestor writes). */
export const EK_NOT_CERTIFIED = Prisma.sql`(attestor = 'tpm' AND ek_certified IS NOT TRUE)`;

/** The requests a pool's operators see: the pool's, and its site's that no pool claimed yet, of the pool's tenant. */
export function visibleTo(pool: { id: string; siteId: string; ownerTenantId: string }): Prisma.Sql {
  return Prisma.sql`tenant_id = ${pool.ownerTenantId} AND (pool_id = ${pool.id} OR (pool_id IS NULL AND site_id = ${pool.siteId}))`;
}

export async function selectJoinRequest(tx: Tx, id: string, visible: Prisma.Sql): Promise<JoinRequestRow | null> {
  const [row] = await tx.$queryRaw<JoinRequestRow[]>`SELECT ${RECORD_COLUMNS} FROM join_requests WHERE id = ${id} AND ${visible}`;
  return row ?? null;
}

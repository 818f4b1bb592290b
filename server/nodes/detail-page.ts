import type { Db, Tx } from '../db/client';
import { RECORD_COLUMNS, toJoinRequestRecord, type JoinRequestRow } from '../requests/records';
import type { NodeAdmission } from '../../protocol/api/node-page-schemas';

type NodeRef = { id: string; poolId: string | null; siteId: string; claims: unknown };

/** The deciding actor's kind, as the node page words it: an operator (or their key), a rule, an import. */
function decidedVia(decidedBy: string | null): NodeAdmission['decidedVia'] {
  if (!decidedBy) return null;
  if (decidedBy.startsWith('rule:')) return 'rule';
  if (decidedBy.startsWith('import:')) return 'import';
  return 'operator';
}

/**
 * The join request that admitted the node (the newest one the join consumed, if it was admitted more than
 * once), with who decided it, when and why, and both approvals on a two-person site. Read by the node id the
 * join wrote on the request, so a request of another pool's view still names the node it admitted.
 */
async function admissionOf(db: Db | Tx, nodeId: string): Promise<NodeAdmission | null> {
  // Kept as Prisma.sql: the columns are server/requests' RECORD_COLUMNS (a Prisma.sql fragment that module owns,
  // shared by the queue's reads); this read moves to the typed layer with them.
  const [row] = await db.$queryRaw<JoinRequestRow[]>`
    SELECT ${RECORD_COLUMNS} FROM join_requests WHERE node_id = ${nodeId}
     ORDER BY consumed_at DESC NULLS LAST, id DESC LIMIT 1`;
  if (!row) return null;
  const record = toJoinRequestRecord(row);
  return {
    requestId: record.id,
    attestor: record.attestor,
    askedAt: record.createdAt,
    decidedAt: record.decidedAt,
    consumedAt: record.consumedAt,
    decidedVia: decidedVia(record.decidedBy),
    decidedBy: record.decidedBy,
    decidedByName: record.decidedByName,
    reason: record.reason,
    requiredApprovals: record.requiredApprovals,
    firstApproval: record.firstApproval
      ? { by: record.firstApproval.by, byName: record.firstApproval.byName, at: record.firstApproval.at }
      : null,
    hardwareKeyTrusted: record.hardwareKeyTrusted,
  };
}

/** The page's names and the certificate's role: one query each, beside the detail's own. */
export async function nodePageFacts(db: Db | Tx, node: NodeRef, currentSerial: string | null) {
  const [pool, site, cert, admission] = await Promise.all([
    node.poolId ? db.pool.findUnique({ where: { id: node.poolId }, select: { name: true } }) : null,
    db.site.findUnique({ where: { id: node.siteId }, select: { name: true } }),
    // The current certificate's role; a node without a live one shows the role of its newest.
    db.nodeCert.findFirst({
      where: currentSerial ? { serial: currentSerial } : { nodeId: node.id },
      select: { role: true },
      orderBy: [{ createdAt: 'desc' }, { notBefore: 'desc' }, { serial: 'desc' }],
    }),
    admissionOf(db, node.id),
  ]);
  const hostname = ((node.claims ?? {}) as { hostname?: unknown }).hostname;
  return {
    hostname: typeof hostname === 'string' && hostname ? hostname : null,
    poolName: pool?.name ?? null,
    siteName: site?.name ?? null,
    certificateRole: cert?.role ?? null,
    admission,
  };
}

import type { Db, Tx } from '../db/client';
import { CERTIFICATE_HISTORY_LIMIT, type NodeCertificateRecord } from '../../protocol/api/node-schemas';

/** The audit entries a join writes for a node (one per join), newest first: the first names the token. */
type JoinAuditRow = { actor: string; action: string; data: unknown };

/**
 * A node's certificates, newest first, with how each was issued. Only two writers insert `node_certs` rows:
 * the join (its `node.joined` or `node.reclaimed` audit entry names the serial it issued) and the renewal
 * (which writes no per-certificate record), so a serial no join names was issued by a renewal.
 */
export async function certificateHistory(
  db: Db | Tx,
  nodeId: string,
  currentSerial: string | null,
  joins: JoinAuditRow[],
): Promise<{ certificates: NodeCertificateRecord[]; certificateCount: number }> {
  const [rows, certificateCount] = await Promise.all([
    db.nodeCert.findMany({
      where: { nodeId },
      select: { serial: true, notBefore: true, notAfter: true, identityGeneration: true, revokedAt: true, revocationReason: true },
      // created_at is the issuing transaction's time; not_before breaks ties within one transaction's clock.
      orderBy: [{ createdAt: 'desc' }, { notBefore: 'desc' }, { serial: 'desc' }],
      take: CERTIFICATE_HISTORY_LIMIT,
    }),
    db.nodeCert.count({ where: { nodeId } }),
  ]);
  const issuedByJoin = new Map<string, 'join' | 'reclaim'>();
  for (const entry of joins) {
    const serial = (entry.data as { certificateSerial?: unknown } | null)?.certificateSerial;
    if (typeof serial === 'string') issuedByJoin.set(serial, entry.action === 'node.reclaimed' ? 'reclaim' : 'join');
  }
  const certificates = rows.map((c): NodeCertificateRecord => ({
    serial: c.serial,
    notBefore: c.notBefore.toISOString(),
    notAfter: c.notAfter.toISOString(),
    identityGeneration: c.identityGeneration,
    isCurrent: c.serial === currentSerial,
    revokedAt: c.revokedAt?.toISOString() ?? null,
    revocationReason: c.revocationReason,
    issuedBy: issuedByJoin.get(c.serial) ?? 'renewal',
  }));
  return { certificates, certificateCount };
}

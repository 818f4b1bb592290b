import type { NodeCertificateRecord } from './node-schemas';

/**
 * Where a certificate of a node's history stands, as the console's badge and the CLI's column name it:
 * revoked wins over expired (a revoked certificate is refused whatever its dates), and `valid` is an earlier
 * certificate that a renewal superseded but that has not expired (renewal does not revoke it).
 */
export type CertificateStanding = 'current' | 'revoked' | 'expired' | 'valid';

export function certificateStanding(
  cert: Pick<NodeCertificateRecord, 'isCurrent' | 'revokedAt' | 'notAfter'>,
  now: number,
): CertificateStanding {
  if (cert.revokedAt) return 'revoked';
  if (Date.parse(cert.notAfter) <= now) return 'expired';
  return cert.isCurrent ? 'current' : 'valid';
}

import { LocalTime } from '@/components/ui/time';
import { formatRelative } from '@/lib/join-token-form';
import { certificateStanding, type CertificateStanding } from '@/protocol/api/certificate-standing';
import type { NodeCertificateRecord } from '@/protocol/api/node-schemas';
import { TableScroll } from '@/components/ui/table-scroll';

const BADGES: Record<CertificateStanding, { label: string; className: string; hint: string }> = {
  current: { label: 'current', className: 'badge badge-success', hint: 'The certificate the node holds now' },
  valid: { label: 'superseded', className: 'badge', hint: 'Replaced by a renewal; it stays valid until it expires' },
  expired: { label: 'expired', className: 'badge badge-muted', hint: 'Past its expiry: no longer accepted' },
  revoked: { label: 'revoked', className: 'badge badge-danger', hint: 'Revoked: refused whatever its dates' },
};

/** The revocation reasons lifecycle.ts and the join write, in words. */
const REVOKED_BECAUSE: Record<string, string> = {
  revoked: 'identity revoked',
  deleted: 'node deleted',
  reclaimed: 'reclaimed by a new join',
};

const ISSUED_BY: Record<NodeCertificateRecord['issuedBy'], string> = { join: 'join', reclaim: 'join (reclaim)', renewal: 'renewal' };

/** A node's certificates, newest first: what issued each, its validity in words, and where it stands now. */
export function CertificateHistory({ certificates, total, now }: { certificates: NodeCertificateRecord[]; total: number; now: number }) {
  return (
    <TableScroll label="Certificate history">
      <table className="table">
        {total > certificates.length && (
          <caption className="muted">
            The newest {certificates.length} of {total} certificates.
          </caption>
        )}
        <thead>
          <tr>
            <th scope="col">Serial</th>
            <th scope="col">Status</th>
            <th scope="col">Issued by</th>
            <th scope="col">Generation</th>
            <th scope="col">Valid from</th>
            <th scope="col">Expires</th>
            <th scope="col">Revoked</th>
          </tr>
        </thead>
        <tbody>
          {certificates.map((cert) => {
            const badge = BADGES[certificateStanding(cert, now)];
            const expiry = formatRelative(cert.notAfter, now);
            return (
              <tr key={cert.serial}>
                <th scope="row">
                  <code>{cert.serial}</code>
                </th>
                <td>
                  <span className={badge.className} title={badge.hint}>
                    {badge.label}
                  </span>
                </td>
                <td>{ISSUED_BY[cert.issuedBy]}</td>
                <td className="cell-number">{cert.identityGeneration}</td>
                <td className="cell-time">
                  <LocalTime iso={cert.notBefore} />
                </td>
                <td className="cell-time">
                  <LocalTime iso={cert.notAfter} />
                  <span className="cell-sub">{expiry.startsWith('in ') ? `expires ${expiry}` : `expired ${expiry}`}</span>
                </td>
                <td className="cell-time">
                  {cert.revokedAt ? (
                    <>
                      <LocalTime iso={cert.revokedAt} />
                      {cert.revocationReason && (
                        <span className="cell-sub">{REVOKED_BECAUSE[cert.revocationReason] ?? cert.revocationReason}</span>
                      )}
                    </>
                  ) : (
                    <span className="muted">no</span>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </TableScroll>
  );
}

import { LocalTime } from '@/components/ui/time';
import { formatRelative } from '@/lib/join-token-form';
import { certificateStanding, type CertificateStanding } from '@/protocol/api/certificate-standing';
import type { NodeCertificateRecord } from '@/protocol/api/node-schemas';
import { DataTable, type DataColumn } from '@/components/ui/data-table';

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

const standing = (now: number) => (cert: NodeCertificateRecord) => BADGES[certificateStanding(cert, now)];

function ExpiresCell({ cert, now }: { cert: NodeCertificateRecord; now: number }) {
  const expiry = formatRelative(cert.notAfter, now);
  return (
    <>
      <LocalTime iso={cert.notAfter} />
      <span className="cell-sub">{expiry.startsWith('in ') ? `expires ${expiry}` : `expired ${expiry}`}</span>
    </>
  );
}

function RevokedCell({ cert }: { cert: NodeCertificateRecord }) {
  if (!cert.revokedAt) return <span className="muted">no</span>;
  return (
    <>
      <LocalTime iso={cert.revokedAt} />
      {cert.revocationReason && <span className="cell-sub">{REVOKED_BECAUSE[cert.revocationReason] ?? cert.revocationReason}</span>}
    </>
  );
}

function certificateColumns(now: number): DataColumn<NodeCertificateRecord>[] {
  const badgeOf = standing(now);
  return [
    { id: 'serial', header: 'Serial', rowHeader: true, cell: (cert) => <code>{cert.serial}</code> },
    {
      id: 'status',
      header: 'Status',
      cell: (cert) => (
        <span className={badgeOf(cert).className} title={badgeOf(cert).hint}>
          {badgeOf(cert).label}
        </span>
      ),
    },
    { id: 'issuedBy', header: 'Issued by', cell: (cert) => ISSUED_BY[cert.issuedBy] },
    { id: 'generation', header: 'Generation', className: 'cell-number', cell: (cert) => cert.identityGeneration },
    { id: 'from', header: 'Valid from', className: 'cell-time', cell: (cert) => <LocalTime iso={cert.notBefore} /> },
    { id: 'expires', header: 'Expires', className: 'cell-time', cell: (cert) => <ExpiresCell cert={cert} now={now} /> },
    { id: 'revoked', header: 'Revoked', className: 'cell-time', cell: (cert) => <RevokedCell cert={cert} /> },
  ];
}

/** A node's certificates, newest first: what issued each, its validity in words, and where it stands now. */
export function CertificateHistory({ certificates, total, now }: { certificates: NodeCertificateRecord[]; total: number; now: number }) {
  return (
    <DataTable
      rows={certificates}
      columns={certificateColumns(now)}
      rowKey={(cert) => cert.serial}
      label="Certificate history"
      showCaption
      caption={total > certificates.length ? `The newest ${certificates.length} of ${total} certificates.` : undefined}
    />
  );
}

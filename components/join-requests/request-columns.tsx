'use client';

import type { DataColumn } from '@/components/ui/data-table';
import { machineSummary } from '@/lib/join-request-queue';
import { formatAge, formatRelative } from '@/lib/join-token-form';
import type { JoinRequestRecord } from '@/protocol/api/join-request-schemas';
import { EkNotCertifiedBadge, HardwareKeyBadge } from './request-badges';

type Column = DataColumn<JoinRequestRecord>;

interface RequestColumnsOptions {
  /** The browser's clock; null while the server's HTML is hydrated (ages and expiries are left blank then). */
  now: number | null;
  canDecide: boolean;
  /** A click on the row's id: it becomes the current request, its detail shown. */
  onOpen: (row: JoinRequestRecord) => void;
  /** The row's own Approve/Reject, which the phone layout shows on each card. */
  onDecide: (row: JoinRequestRecord, action: 'approve' | 'reject') => void;
}

/** Whether a request can still be decided or withdrawn (pending, or approved and not yet joined). */
export const isOpenRequest = (row: JoinRequestRecord) => row.state === 'pending' || row.state === 'approved';

const line = 'cell-line';

function StateCell({ row }: { row: JoinRequestRecord }) {
  return (
    <>
      <span
        className={`status status-${row.state}`}
        title={row.decidedBy ? `${row.state} by ${row.decidedByName ?? row.decidedBy}${row.reason ? `: ${row.reason}` : ''}` : undefined}
      >
        {row.state}
      </span>
      {/* Decided without a person: say which rule (or import) did it, in the row itself. */}
      {row.decidedBy && !row.decidedBy.startsWith('operator:') && row.decidedByName && (
        <span className="cell-sub">by {row.decidedByName}</span>
      )}
      {row.state === 'pending' && row.requiredApprovals === 2 && (
        <span className="cell-sub approvals" data-testid="approvals">
          {row.firstApproval ? `1 of 2 · ${row.firstApproval.byName ?? row.firstApproval.by}` : '0 of 2'}
        </span>
      )}
    </>
  );
}

function AskedCell({ row, now }: { row: JoinRequestRecord; now: number | null }) {
  const utc = row.createdAt.replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  return (
    <time dateTime={row.createdAt} title={now === null ? undefined : `${new Date(row.createdAt).toLocaleString()} (${utc})`}>
      {now === null ? null : formatAge(row.createdAt, now)}
    </time>
  );
}

function DecideButtons({ row, onDecide }: { row: JoinRequestRecord; onDecide: RequestColumnsOptions['onDecide'] }) {
  return (
    <>
      <button
        type="button"
        className="btn btn-small btn-primary"
        onClick={() => onDecide(row, 'approve')}
        disabled={row.state !== 'pending'}
        aria-label={`Approve request ${row.id}`}
      >
        Approve
      </button>
      <button
        type="button"
        className="btn btn-small btn-danger"
        onClick={() => onDecide(row, 'reject')}
        disabled={!isOpenRequest(row)}
        aria-label={`Reject request ${row.id}`}
      >
        Reject
      </button>
    </>
  );
}

/**
 * The queue's columns: one request on one line (dense: every column fits at 1280 px); the full claims are in
 * the detail panel. At phone width the same row is laid out as a card (CSS), with its own Approve and Reject.
 */
export function requestColumns({ now, canDecide, onOpen, onDecide }: RequestColumnsOptions): Column[] {
  const columns: Column[] = [
    {
      id: 'request',
      header: 'Request',
      label: '',
      rowHeader: true,
      className: `cell-name ${line}`,
      // The id's random tail tells rows apart; the whole id is the button's name and its title.
      cell: (row) => (
        <button type="button" className="link-button" onClick={() => onOpen(row)} aria-label={row.id} title={row.id}>
          <code>…{row.id.slice(-10)}</code>
        </button>
      ),
    },
    { id: 'state', header: 'State', className: line, cell: (row) => <StateCell row={row} /> },
    {
      id: 'attestor',
      header: 'Attestor',
      className: line,
      cell: (row) => (
        <>
          {row.attestor}
          {row.ekCertified === false && <EkNotCertifiedBadge />}
        </>
      ),
    },
    {
      id: 'claimed',
      header: 'Claimed',
      className: `${line} cell-machine`,
      headerProps: { className: 'col-machine', title: 'What the machine says about itself' },
      title: (row) => machineSummary(row.claims) || undefined,
      cell: (row) => machineSummary(row.claims) || <span className="muted">no claims</span>,
    },
    {
      id: 'mac',
      header: 'Boot MAC',
      className: `${line} cell-mac`,
      headerProps: { className: 'col-mac', title: "The MAC the boot step vouched for (the discovery token's lease)" },
      cellProps: () => ({ 'data-testid': 'vouched-mac' }),
      cell: (row) => (row.mac ? <code>{row.mac}</code> : <span className="muted">none</span>),
    },
    {
      id: 'vouched',
      header: 'Boot step (IP · by)',
      label: 'Boot step',
      className: `${line} cell-vouched`,
      headerProps: { className: 'col-vouched', title: "What the boot step vouched for: the lease's IP and who minted the token" },
      title: (row) => `IP ${row.ip ?? 'unknown'}, vouched by ${row.vouchedBy ?? 'nobody'}`,
      cell: (row) => (
        <>
          {row.ip ?? <span className="muted">no IP</span>} · {row.vouchedBy ?? <span className="muted">nobody</span>}
        </>
      ),
    },
    {
      id: 'key',
      header: 'Hardware key',
      className: line,
      cell: (row) => <HardwareKeyBadge hasKey={row.hardwareKey !== null} isTrusted={row.hardwareKeyTrusted} />,
    },
    { id: 'asked', header: 'Asked', className: `${line} cell-time`, cell: (row) => <AskedCell row={row} now={now} /> },
    {
      id: 'expires',
      header: 'Expires',
      className: `${line} cell-time`,
      cell: (row) =>
        isOpenRequest(row) ? (
          <span title={row.expiresAt}>{now === null ? null : `expires ${formatRelative(row.expiresAt, now)}`}</span>
        ) : (
          <span className="muted">—</span>
        ),
    },
  ];
  if (!canDecide) return columns;
  return [
    ...columns,
    {
      id: 'decide',
      header: 'Decide',
      label: '',
      className: 'row-actions',
      headerProps: { className: 'row-actions' },
      cell: (row) => <DecideButtons row={row} onDecide={onDecide} />,
    },
  ];
}

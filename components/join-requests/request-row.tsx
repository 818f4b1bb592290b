'use client';

import { hardwareKeyWording, machineSummary } from '@/lib/join-request-queue';
import { formatAge, formatRelative } from '@/lib/join-token-form';
import type { JoinRequestRecord } from '@/protocol/api/join-request-schemas';

interface RequestRowProps {
  row: JoinRequestRecord;
  /** The browser's clock; null while the server's HTML is hydrated (ages and expiries are left blank then). */
  now: number | null;
  isCurrent: boolean;
  isSelected: boolean;
  canDecide: boolean;
  onFocus: () => void;
  onSelect: (shift: boolean) => void;
  /** The row's own Approve/Reject, which the phone layout shows on each card. */
  onDecide: (action: 'approve' | 'reject') => void;
}

/** The badge of a hardware key, in the one wording requests and nodes share. */
export function HardwareKeyBadge({ hasKey, isTrusted, isRamdisk }: { hasKey: boolean; isTrusted: boolean; isRamdisk?: boolean }) {
  const wording = hardwareKeyWording(hasKey, isTrusted, isRamdisk);
  return wording.tone === 'none' ? (
    <span className="muted" title={wording.title}>
      {wording.label}
    </span>
  ) : (
    <span className={`badge badge-${wording.tone}`} title={wording.title}>
      {wording.label}
    </span>
  );
}

/** A tpm enrollment whose EK certificate does not chain to a configured vendor root (or that sent none). */
export function EkNotCertifiedBadge() {
  return (
    <span
      className="badge badge-warn ek-uncertified"
      title="The TPM's endorsement key has no certificate from a configured TPM vendor root: nothing but this request vouches that it is a real TPM"
    >
      EK not vendor-certified
    </span>
  );
}

/**
 * One request on one line (dense: every column fits at 1280 px); the full claims are in the detail panel.
 * At phone width the same row is laid out as a card (CSS), with its own Approve and Reject.
 */
export function RequestRow({ row, now, isCurrent, isSelected, canDecide, onFocus, onSelect, onDecide }: RequestRowProps) {
  const machine = machineSummary(row.claims);
  const isOpen = row.state === 'pending' || row.state === 'approved';
  return (
    <tr
      id={`request-row-${row.id}`}
      className={`request-row${isCurrent ? ' row-current' : ''}${isOpen ? '' : ' row-archived'}`}
      aria-current={isCurrent ? 'true' : undefined}
      data-state={row.state}
    >
      <td className="cell-check">
        <input
          type="checkbox"
          aria-label={`Select request ${row.id}`}
          checked={isSelected}
          // Shift is read from the click; onChange alone does not say whether it was held.
          onClick={(event) => onSelect(event.shiftKey)}
          onChange={() => {}}
        />
      </td>
      <th scope="row" className="cell-name cell-line">
        {/* The id's random tail tells rows apart; the whole id is the button's name and its title. */}
        <button type="button" className="link-button" onClick={onFocus} aria-label={row.id} title={row.id}>
          <code>…{row.id.slice(-10)}</code>
        </button>
      </th>
      <td className="cell-line" data-label="State">
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
      </td>
      <td className="cell-line" data-label="Attestor">
        {row.attestor}
        {row.ekCertified === false && <EkNotCertifiedBadge />}
      </td>
      <td className="cell-line cell-machine" data-label="Claimed" title={machine || undefined}>
        {machine || <span className="muted">no claims</span>}
      </td>
      <td className="cell-line cell-mac" data-label="Boot MAC" data-testid="vouched-mac">
        {row.mac ? <code>{row.mac}</code> : <span className="muted">none</span>}
      </td>
      <td
        className="cell-line cell-vouched"
        data-label="Boot step"
        title={`IP ${row.ip ?? 'unknown'}, vouched by ${row.vouchedBy ?? 'nobody'}`}
      >
        {row.ip ?? <span className="muted">no IP</span>} · {row.vouchedBy ?? <span className="muted">nobody</span>}
      </td>
      <td className="cell-line" data-label="Hardware key">
        <HardwareKeyBadge hasKey={row.hardwareKey !== null} isTrusted={row.hardwareKeyTrusted} />
      </td>
      <td className="cell-line cell-time" data-label="Asked">
        <time
          dateTime={row.createdAt}
          title={
            now === null
              ? undefined
              : `${new Date(row.createdAt).toLocaleString()} (${row.createdAt.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')})`
          }
        >
          {now === null ? null : formatAge(row.createdAt, now)}
        </time>
      </td>
      <td className="cell-line cell-time" data-label="Expires">
        {isOpen ? (
          <span title={row.expiresAt}>{now === null ? null : `expires ${formatRelative(row.expiresAt, now)}`}</span>
        ) : (
          <span className="muted">—</span>
        )}
      </td>
      {canDecide && (
        <td className="row-actions">
          <button
            type="button"
            className="btn btn-small btn-primary"
            onClick={() => onDecide('approve')}
            disabled={row.state !== 'pending'}
            aria-label={`Approve request ${row.id}`}
          >
            Approve
          </button>
          <button
            type="button"
            className="btn btn-small btn-danger"
            onClick={() => onDecide('reject')}
            disabled={!isOpen}
            aria-label={`Reject request ${row.id}`}
          >
            Reject
          </button>
        </td>
      )}
    </tr>
  );
}

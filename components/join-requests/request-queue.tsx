'use client';

import { useEffect, useRef, useState } from 'react';
import { Dialog } from '@/components/ui/dialog';
import { LocalTime } from '@/components/ui/time';
import { toApiError } from '@/lib/api-errors';
import type { Pool, Tenant } from '@/lib/api-types';
import { QUEUE_SHORTCUTS, approvablePools, claimEntries, clickSelection, decidedElsewhere, isTypingTarget } from '@/lib/join-request-queue';
import { formatAge, formatRelative } from '@/lib/join-token-form';
import { useTRPCClient } from '@/lib/trpc';
import type { JoinRequestRecord } from '@/server/requests/schemas';
import { DecideDialog, type Decision } from './decide-dialog';
import { RequestDetail } from './request-detail';

interface RequestQueueProps {
  rows: JoinRequestRecord[];
  initialRequest: string | null;
  now: number;
  pool: Pool;
  sitePools: Pool[];
  tenant: Tenant;
  canDecide: boolean;
  onDecided: (records: JoinRequestRecord[]) => void;
}

/** Which requests an action can still take: approve takes pending ones, reject also withdraws an approval. */
const actionable = (action: 'approve' | 'reject', row: JoinRequestRecord) => row.state === 'pending' || (action === 'reject' && row.state === 'approved');

/** The rows with selection (click, shift-click, select all), keyboard shortcuts, the detail panel and decisions. */
export function RequestQueue({ rows, initialRequest, now, pool, sitePools, tenant, canDecide, onDecided }: RequestQueueProps) {
  const client = useTRPCClient();
  const order = rows.map((row) => row.id);
  const [cursor, setCursor] = useState<string | null>(initialRequest && order.includes(initialRequest) ? initialRequest : (order[0] ?? null));
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [anchor, setAnchor] = useState<string | null>(null);
  const [action, setAction] = useState<'approve' | 'reject' | null>(null);
  const [targets, setTargets] = useState<string[]>([]);
  const [isPending, setPending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [notices, setNotices] = useState<string[]>([]);
  const [isHelpOpen, setHelpOpen] = useState(false);
  const current = rows.find((row) => row.id === cursor) ?? rows[0] ?? null;
  const selectedRows = rows.filter((row) => selected.has(row.id));
  const allSelected = rows.length > 0 && selectedRows.length === rows.length;
  // Only pools whose approved retry the join would admit (attestor policy, live, this site) are offered.
  const offeredPools = approvablePools(sitePools, rows.filter((row) => targets.includes(row.id)));
  const defaultPoolId = offeredPools.some((p) => p.id === pool.id) ? pool.id : (offeredPools[0]?.id ?? '');

  function open(next: 'approve' | 'reject') {
    if (!canDecide) return;
    const chosen = selectedRows.length ? selectedRows : current ? [current] : [];
    if (!chosen.length) return;
    const [takes, cannot] = [chosen.filter((row) => actionable(next, row)), chosen.filter((row) => !actionable(next, row))];
    // A row already decided explains itself instead of being sent to fail.
    const explained = cannot.map((row) => decidedElsewhere(row, next));
    if (!takes.length) {
      setNotices(explained);
      return;
    }
    setNotices(explained);
    setTargets(takes.map((row) => row.id));
    setError(null);
    setAction(next);
  }

  async function decide(decision: Decision) {
    setPending(true);
    setError(null);
    const ref = { tenantId: tenant.id, poolId: decision.action === 'approve' ? decision.poolId : pool.id };
    const reason = decision.reason || undefined;
    const decided: JoinRequestRecord[] = [];
    const said: string[] = [];
    const explain = async (requestId: string) => {
      const record = await client.joinRequests.get.query({ tenantId: tenant.id, poolId: pool.id, requestId }).catch(() => null);
      if (record) {
        decided.push(record);
        said.push(decidedElsewhere(record, decision.action));
      } else said.push(`Request ${requestId} is no longer there.`);
    };
    try {
      if (decision.action === 'approve') {
        const answer = await client.joinRequests.approveMany.mutate({ ...ref, requestIds: targets, ttlSeconds: decision.ttlSeconds, reason });
        decided.push(...answer.approved);
        if (answer.approved.length) said.unshift(`Approved ${answer.approved.length === 1 ? `request ${answer.approved[0]!.id}` : `${answer.approved.length} requests`} into pool ${sitePools.find((p) => p.id === decision.poolId)?.name ?? decision.poolId}.`);
        for (const id of answer.skipped) await explain(id);
      } else {
        let rejected = 0;
        for (const requestId of targets) {
          try {
            decided.push(await client.joinRequests.reject.mutate({ ...ref, requestId, reason }));
            rejected++;
          } catch (failure) {
            if (toApiError(failure).domainCode !== 'INVALID_STATE') throw failure;
            await explain(requestId);
          }
        }
        if (rejected) said.unshift(`Rejected ${rejected === 1 ? 'the request' : `${rejected} requests`}.`);
      }
      onDecided(decided);
      setNotices((before) => [...said, ...before.filter((text) => !said.includes(text))]);
      setSelected(new Set());
      setAction(null);
    } catch (failure) {
      if (decided.length) onDecided(decided);
      setError(toApiError(failure).message);
    } finally {
      setPending(false);
    }
  }

  // The shortcuts, on the page but not while typing in a field or while a dialog is open.
  const keys = useRef<(event: KeyboardEvent) => void>(() => {});
  keys.current = (event) => {
    if (event.metaKey || event.ctrlKey || event.altKey || isTypingTarget(event.target)) return;
    const at = current ? order.indexOf(current.id) : -1;
    const move = (to: number) => {
      const id = order[Math.max(0, Math.min(order.length - 1, to))];
      if (id) {
        setCursor(id);
        document.getElementById(`request-row-${id}`)?.scrollIntoView({ block: 'nearest' });
      }
    };
    if (event.key === 'j') move(at + 1);
    else if (event.key === 'k') move(at - 1);
    else if (event.key === 'x' && current) {
      setSelected(clickSelection(order, selected, anchor, current.id, false));
      setAnchor(current.id);
    } else if (event.key === 'a') open('approve');
    else if (event.key === 'r') open('reject');
    else if (event.key === '?') setHelpOpen(true);
    else return;
    event.preventDefault();
  };
  useEffect(() => {
    const listener = (event: KeyboardEvent) => keys.current(event);
    document.addEventListener('keydown', listener);
    return () => document.removeEventListener('keydown', listener);
  }, []);

  return (
    <>
      <div className="queue-toolbar">
        <p className="panel-notice" role="status" aria-live="polite">
          {notices.map((text) => (
            <span key={text} className="queue-notice">
              {text}
            </span>
          ))}
        </p>
        {canDecide && (
          <div className="queue-actions">
            <span className="muted">{selectedRows.length ? `${selectedRows.length} selected` : current ? `Current: ${current.id}` : ''}</span>
            <button type="button" className="btn btn-small btn-primary" onClick={() => open('approve')} aria-keyshortcuts="a">
              {selectedRows.length > 1 ? `Approve ${selectedRows.length}` : 'Approve'}
            </button>
            <button type="button" className="btn btn-small btn-danger" onClick={() => open('reject')} aria-keyshortcuts="r">
              {selectedRows.length > 1 ? `Reject ${selectedRows.length}` : 'Reject'}
            </button>
          </div>
        )}
        <button type="button" className="btn btn-small btn-quiet-neutral" onClick={() => setHelpOpen(true)} aria-keyshortcuts="?">
          Keyboard shortcuts
        </button>
      </div>
      <div className="queue-layout">
        <div className="table-scroll">
          <table className="table">
            <caption className="visually-hidden">Join requests of site {pool.siteId}</caption>
            <thead>
              <tr>
                <th scope="col">
                  <input type="checkbox" aria-label="Select all requests on this page" checked={allSelected} onChange={() => setSelected(allSelected ? new Set() : new Set(order))} />
                </th>
                <th scope="col">Request</th>
                <th scope="col">State</th>
                <th scope="col">Machine</th>
                <th scope="col">IP</th>
                <th scope="col">Vouched by</th>
                <th scope="col">Hardware key</th>
                <th scope="col">Asked</th>
                <th scope="col">Expires</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <RequestRow
                  key={row.id}
                  row={row}
                  now={now}
                  isCurrent={row.id === current?.id}
                  isSelected={selected.has(row.id)}
                  onFocus={() => setCursor(row.id)}
                  onSelect={(shift) => {
                    setSelected(clickSelection(order, selected, anchor, row.id, shift));
                    setAnchor(row.id);
                    setCursor(row.id);
                  }}
                />
              ))}
            </tbody>
          </table>
        </div>
        {current && <RequestDetail request={current} now={now} />}
      </div>
      <DecideDialog
        action={action}
        count={targets.length}
        pools={offeredPools}
        defaultPoolId={defaultPoolId}
        isPending={isPending}
        error={error}
        onDecide={(decision) => void decide(decision)}
        onClose={() => setAction(null)}
      />
      <Dialog open={isHelpOpen} onClose={() => setHelpOpen(false)} title="Keyboard shortcuts" size="small">
        <dl className="details dialog-body">
          {QUEUE_SHORTCUTS.map((shortcut) => (
            <div key={shortcut.key}>
              <dt>
                <kbd>{shortcut.key}</kbd>
              </dt>
              <dd>{shortcut.does}</dd>
            </div>
          ))}
        </dl>
        <footer className="dialog-footer">
          <button type="button" className="btn" onClick={() => setHelpOpen(false)} data-autofocus>
            Close
          </button>
        </footer>
      </Dialog>
    </>
  );
}

interface RequestRowProps {
  row: JoinRequestRecord;
  now: number;
  isCurrent: boolean;
  isSelected: boolean;
  onFocus: () => void;
  onSelect: (shift: boolean) => void;
}

function RequestRow({ row, now, isCurrent, isSelected, onFocus, onSelect }: RequestRowProps) {
  const claims = claimEntries(row.claims);
  const isOpen = row.state === 'pending' || row.state === 'approved';
  return (
    <tr id={`request-row-${row.id}`} className={`${isCurrent ? 'row-current' : ''}${isOpen ? '' : ' row-archived'}`} aria-current={isCurrent ? 'true' : undefined} data-state={row.state}>
      <td>
        <input
          type="checkbox"
          aria-label={`Select request ${row.id}`}
          checked={isSelected}
          // Shift is read from the click; onChange alone does not say whether it was held.
          onClick={(event) => onSelect(event.shiftKey)}
          onChange={() => {}}
        />
      </td>
      <th scope="row" className="cell-name">
        <button type="button" className="link-button" onClick={onFocus}>
          <code>{row.id}</code>
        </button>
        <span className="cell-sub">{row.attestor}</span>
      </th>
      <td>
        <span className={`status status-${row.state}`} title={row.decidedBy ? `by ${row.decidedByName ?? row.decidedBy}${row.reason ? `: ${row.reason}` : ''}` : undefined}>
          {row.state}
        </span>
        {row.decidedBy && <span className="cell-sub">by {row.decidedByName ?? row.decidedBy}</span>}
      </td>
      <td className="cell-wrap">
        {claims.length ? (
          <ul className="tags">
            {claims.map((entry) => (
              <li key={entry.key} className="tag">
                <span className="tag-key">{entry.label}</span> <span>{entry.value}</span>
              </li>
            ))}
          </ul>
        ) : (
          <span className="muted">no claims</span>
        )}
      </td>
      <td>{row.ip ?? <span className="muted">unknown</span>}</td>
      <td>{row.vouchedBy ?? <span className="muted">nobody</span>}</td>
      <td>
        {row.hardwareKeyTrusted ? (
          <span className="badge badge-info">trusted key</span>
        ) : row.hardwareKey ? (
          <span className="badge badge-warn" title="Fewer than two identifiers made the key">untrusted key</span>
        ) : (
          <span className="muted">none</span>
        )}
      </td>
      <td className="cell-time">
        <LocalTime iso={row.createdAt} />
        <span className="cell-sub">{formatAge(row.createdAt, now)}</span>
      </td>
      <td className="cell-time">{isOpen ? <span title={row.expiresAt}>expires {formatRelative(row.expiresAt, now)}</span> : <span className="muted">—</span>}</td>
    </tr>
  );
}

'use client';

import { useEffect, useState, type Dispatch, type SetStateAction } from 'react';
import { DataTable } from '@/components/ui/data-table';
import type { Pool, Tenant } from '@/lib/api-types';
import { approvablePools, clickSelection, decidedElsewhere } from '@/lib/join-request-queue';
import type { JoinRequestRecord } from '@/protocol/api/join-request-schemas';
import { DecideDialog } from './decide-dialog';
import { QueueActions, ShortcutsDialog, selectionWords } from './queue-parts';
import { RequestDetail } from './request-detail';
import { isOpenRequest, requestColumns } from './request-columns';
import { useDecide, type QueueMatching } from './use-decide';
import { useQueueKeys } from './use-queue-keys';

interface RequestQueueProps {
  rows: JoinRequestRecord[];
  initialRequest: string | null;
  /** The browser's clock, null until hydrated (the Asked and Expires columns). */
  now: number | null;
  pool: Pool;
  sitePools: Pool[];
  tenant: Tenant;
  canDecide: boolean;
  onDecided: (records: JoinRequestRecord[]) => void;
  /**
   * What the last action did, in words (the toolbar's status). Kept by the list around this queue: a bulk
   * decision makes machines join while it runs, and a re-read of the list in between may show no row for a
   * moment, which unmounts this queue; its result must still be said when the rows come back.
   */
  notices: string[];
  onNotices: Dispatch<SetStateAction<string[]>>;
  /** What "select all matching" decides, on the server, in pages of 200 (./use-decide). Null outside the pending view. */
  matching: QueueMatching | null;
}

/** Which requests an action can still take: approve takes pending ones, reject also withdraws an approval. */
const actionable = (action: 'approve' | 'reject', row: JoinRequestRecord) =>
  row.state === 'pending' || (action === 'reject' && isOpenRequest(row));

/** A click on a row's id shows its detail: under the table (narrower than 1400 px), scrolled into view if out of it. */
function showDetail() {
  requestAnimationFrame(() => {
    const detail = document.querySelector<HTMLElement>('.request-detail');
    if (detail && detail.getBoundingClientRect().top >= window.innerHeight) detail.scrollIntoView({ block: 'nearest' });
  });
}

/** The rows with selection (click, shift-click, select all), keyboard shortcuts, the detail panel and decisions. */
export function RequestQueue(props: RequestQueueProps) {
  const { rows, now, pool, sitePools, tenant, canDecide, notices, onNotices: setNotices, matching } = props;
  const order = rows.map((row) => row.id);
  const [cursor, setCursor] = useState<string | null>(
    props.initialRequest && order.includes(props.initialRequest) ? props.initialRequest : (order[0] ?? null),
  );
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [anchor, setAnchor] = useState<string | null>(null);
  const [action, setAction] = useState<'approve' | 'reject' | null>(null);
  const [targets, setTargets] = useState<string[]>([]);
  const [isHelpOpen, setHelpOpen] = useState(false);
  // Every request that matches the filter on the server, not only the rows loaded here.
  const [isAllMatching, setAllMatching] = useState(false);
  // The row whose id button takes the focus once a dialog closes, so the keyboard stays in the list.
  const [focusRow, setFocusRow] = useState<string | null>(null);
  useEffect(() => {
    if (!focusRow) return;
    // Runs after the dialog's own effect closed it (a child's effects run first), so nothing takes it back.
    document.getElementById(`request-row-${focusRow}`)?.querySelector<HTMLElement>('.link-button')?.focus();
    setFocusRow(null);
  }, [focusRow]);
  const current = rows.find((row) => row.id === cursor) ?? rows[0] ?? null;
  const selectedRows = rows.filter((row) => selected.has(row.id));
  const allSelected = rows.length > 0 && selectedRows.length === rows.length;
  const canSelectMatching = matching !== null && allSelected && matching.total > rows.length;
  const allMatching = isAllMatching ? matching : null;
  // Only pools whose approved retry the join would admit (attestor policy, live, this site) are offered; for
  // every match, the loaded rows stand for them (the server skips any whose retry the pool would refuse).
  const offeredPools = approvablePools(sitePools, allMatching ? rows : rows.filter((row) => targets.includes(row.id)));
  const defaultPoolId = offeredPools.some((p) => p.id === pool.id) ? pool.id : (offeredPools[0]?.id ?? '');
  const uncertified = (among: JoinRequestRecord[]) => among.filter((row) => row.ekCertified === false).length;
  const notVendorCertified = allMatching
    ? (allMatching.notVendorCertified ?? uncertified(rows))
    : uncertified(rows.filter((row) => targets.includes(row.id)));

  function select(next: Set<string>) {
    setSelected(next);
    setAllMatching(false);
  }

  /** After a decision, the next row still waiting below the decided ones (else the current row) takes the cursor and focus. */
  function moveOn(decidedIds: ReadonlySet<string>) {
    select(new Set());
    setAction(null);
    const last = Math.max(-1, ...order.map((id, index) => (decidedIds.has(id) ? index : -1)));
    const waiting = (id: string) => !decidedIds.has(id) && rows.find((row) => row.id === id)?.state === 'pending';
    const next = order.slice(last + 1).find(waiting) ?? order.slice(0, last + 1).find(waiting) ?? current?.id ?? order[0] ?? null;
    if (next) {
      setCursor(next);
      setFocusRow(next);
    }
  }

  const decision = useDecide({ tenant, pool, sitePools, allMatching, targets, onDecided: props.onDecided, setNotices, onDone: moveOn });

  function close() {
    setAction(null);
    if (current) setFocusRow(current.id);
  }

  function open(next: 'approve' | 'reject', only?: JoinRequestRecord) {
    if (!canDecide) return;
    if (!only && allMatching) {
      setNotices([]);
      setTargets([]);
      decision.setError(null);
      setAction(next);
      return;
    }
    const chosen = only ? [only] : selectedRows.length ? selectedRows : current ? [current] : [];
    if (!chosen.length) return;
    const takes = chosen.filter((row) => actionable(next, row));
    // A row already decided explains itself instead of being sent to fail.
    setNotices(chosen.filter((row) => !actionable(next, row)).map((row) => decidedElsewhere(row, next)));
    if (!takes.length) return;
    setTargets(takes.map((row) => row.id));
    decision.setError(null);
    setAction(next);
  }

  useQueueKeys({
    onMove: (by) => {
      const at = current ? order.indexOf(current.id) : -1;
      const id = order[Math.max(0, Math.min(order.length - 1, at + by))];
      if (!id) return;
      setCursor(id);
      document.getElementById(`request-row-${id}`)?.scrollIntoView({ block: 'nearest' });
    },
    onToggle: () => {
      if (!current) return;
      select(clickSelection(order, selected, anchor, current.id, false));
      setAnchor(current.id);
    },
    onDecide: (next) => open(next),
    onHelp: () => setHelpOpen(true),
  });

  const columns = requestColumns({
    now,
    canDecide,
    onOpen: (row) => {
      setCursor(row.id);
      showDetail();
    },
    onDecide: (row, next) => {
      setCursor(row.id);
      open(next, row);
    },
  });

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
          <QueueActions
            selection={selectionWords(allMatching?.total ?? null, selectedRows.length, current?.id ?? null)}
            count={allMatching?.total ?? (selectedRows.length > 1 ? selectedRows.length : null)}
            selectMatching={
              canSelectMatching && !isAllMatching ? `Select all ${matching.total} ${matching.isFiltered ? 'matching' : 'pending'}` : null
            }
            isAllMatching={isAllMatching}
            onSelectMatching={() => setAllMatching(true)}
            onClear={() => select(new Set())}
            onDecide={open}
          />
        )}
        <button type="button" className="btn btn-small btn-quiet-neutral" onClick={() => setHelpOpen(true)} aria-keyshortcuts="?">
          Keyboard shortcuts
        </button>
      </div>
      <div className="queue-layout">
        <DataTable
          rows={rows}
          columns={columns}
          rowKey={(row) => row.id}
          label={`Join requests of site ${pool.siteId}`}
          caption={`Join requests of site ${pool.siteId}`}
          rowClassName={(row) => `request-row${row.id === current?.id ? ' row-current' : ''}${isOpenRequest(row) ? '' : ' row-archived'}`}
          rowProps={(row) => ({
            id: `request-row-${row.id}`,
            'aria-current': row.id === current?.id ? 'true' : undefined,
            'data-state': row.state,
          })}
          selection={{
            selected: isAllMatching ? new Set(order) : selected,
            onChange: select,
            rowLabel: (row) => `Select request ${row.id}`,
            allLabel: 'Select all requests on this page',
            onToggle: (row, shift) => {
              select(clickSelection(order, selected, anchor, row.id, shift));
              setAnchor(row.id);
              setCursor(row.id);
            },
          }}
        />
        {current && <RequestDetail request={current} now={now} tenantId={tenant.id} />}
      </div>
      <DecideDialog
        action={action}
        count={allMatching?.total ?? targets.length}
        isAllMatching={allMatching !== null}
        notVendorCertified={notVendorCertified}
        progress={decision.progress}
        pools={offeredPools}
        defaultPoolId={defaultPoolId}
        isPending={decision.isPending}
        error={decision.error}
        onDecide={(chosen) => void decision.decide(chosen)}
        onClose={close}
      />
      <ShortcutsDialog open={isHelpOpen} onClose={() => setHelpOpen(false)} />
    </>
  );
}

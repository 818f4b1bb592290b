'use client';

import { useEffect, useRef, useState, type Dispatch, type SetStateAction } from 'react';
import { toApiError } from '@/lib/api-errors';
import type { Pool, Tenant } from '@/lib/api-types';
import { approvablePools, clickSelection, decidedElsewhere, isTypingTarget } from '@/lib/join-request-queue';
import { useTRPCClient } from '@/lib/trpc';
import type { RequestFilter } from '@/protocol/api/join-request-filter';
import type { JoinRequestRecord } from '@/protocol/api/join-request-schemas';
import { DecideDialog, type Decision } from './decide-dialog';
import { RequestDetail } from './request-detail';
import { QueueActions, QueueTableHead, ShortcutsDialog } from './queue-parts';
import { RequestRow } from './request-row';

interface RequestQueueProps {
  rows: JoinRequestRecord[];
  initialRequest: string | null;
  /** The browser's clock, null until hydrated (RequestRow). */
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
  /**
   * The pending queue's filter with the server's count of every match and the time of that count: what
   * "select all matching" decides, on the server, in pages of 200. Null outside the pending view.
   */
  matching: { filter: RequestFilter; total: number; asOf: string; isFiltered: boolean; notVendorCertified?: number } | null;
}

/** Which requests an action can still take: approve takes pending ones, reject also withdraws an approval. */
const actionable = (action: 'approve' | 'reject', row: JoinRequestRecord) =>
  row.state === 'pending' || (action === 'reject' && row.state === 'approved');

/** The rows with selection (click, shift-click, select all), keyboard shortcuts, the detail panel and decisions. */
export function RequestQueue({
  rows,
  initialRequest,
  now,
  pool,
  sitePools,
  tenant,
  canDecide,
  onDecided,
  notices,
  onNotices: setNotices,
  matching,
}: RequestQueueProps) {
  const client = useTRPCClient();
  const order = rows.map((row) => row.id);
  const [cursor, setCursor] = useState<string | null>(
    initialRequest && order.includes(initialRequest) ? initialRequest : (order[0] ?? null),
  );
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [anchor, setAnchor] = useState<string | null>(null);
  const [action, setAction] = useState<'approve' | 'reject' | null>(null);
  const [targets, setTargets] = useState<string[]>([]);
  const [isPending, setPending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [isHelpOpen, setHelpOpen] = useState(false);
  // Every request that matches the filter on the server, not only the rows loaded here.
  const [isAllMatching, setAllMatching] = useState(false);
  const [progress, setProgress] = useState<{ done: number; total: number } | null>(null);
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
  const matchingCount = isAllMatching && matching ? matching.total : null;
  // Only pools whose approved retry the join would admit (attestor policy, live, this site) are offered; for
  // every match, the loaded rows stand for them (the server skips any whose retry the pool would refuse).
  const offeredPools = approvablePools(sitePools, matchingCount !== null ? rows : rows.filter((row) => targets.includes(row.id)));
  const defaultPoolId = offeredPools.some((p) => p.id === pool.id) ? pool.id : (offeredPools[0]?.id ?? '');
  const notVendorCertified =
    matchingCount !== null
      ? (matching?.notVendorCertified ?? rows.filter((row) => row.ekCertified === false).length)
      : rows.filter((row) => targets.includes(row.id) && row.ekCertified === false).length;

  /** After a decision, the next row still waiting below the decided ones (else the current row) takes the cursor and focus. */
  function moveOn(decidedIds: ReadonlySet<string>) {
    const last = Math.max(-1, ...order.map((id, index) => (decidedIds.has(id) ? index : -1)));
    const waiting = (id: string) => !decidedIds.has(id) && rows.find((row) => row.id === id)?.state === 'pending';
    const next = order.slice(last + 1).find(waiting) ?? order.slice(0, last + 1).find(waiting) ?? current?.id ?? order[0] ?? null;
    if (next) {
      setCursor(next);
      setFocusRow(next);
    }
  }

  /** A click on a row's id shows its detail: under the table (narrower than 1680 px), scrolled into view if out of it. */
  function showDetail() {
    requestAnimationFrame(() => {
      const detail = document.querySelector<HTMLElement>('.request-detail');
      if (detail && detail.getBoundingClientRect().top >= window.innerHeight) detail.scrollIntoView({ block: 'nearest' });
    });
  }

  function close() {
    setAction(null);
    if (current) setFocusRow(current.id);
  }

  function select(next: Set<string>) {
    setSelected(next);
    setAllMatching(false);
  }

  function open(next: 'approve' | 'reject', only?: JoinRequestRecord) {
    if (!canDecide) return;
    if (!only && matchingCount !== null) {
      setNotices([]);
      setTargets([]);
      setError(null);
      setAction(next);
      return;
    }
    const chosen = only ? [only] : selectedRows.length ? selectedRows : current ? [current] : [];
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
      if (matchingCount !== null && matching) {
        await decideAllMatching(decision, ref, reason, decided, said);
      } else if (decision.action === 'approve') {
        const answer = await client.joinRequests.approveMany.mutate({
          ...ref,
          requestIds: targets,
          ttlSeconds: decision.ttlSeconds,
          reason,
          ...(decision.labels ? { labels: decision.labels } : {}),
        });
        decided.push(...answer.approved, ...answer.recorded);
        const [first] = answer.recorded;
        if (first)
          said.unshift(
            `Recorded your approval of ${answer.recorded.length === 1 ? `request ${first.id}` : `${answer.recorded.length} requests`} (${first.approvals} of ${first.requiredApprovals}): not yet effective. Another person must approve ${answer.recorded.length === 1 ? 'it' : 'them'} into the same pool.`,
          );
        if (answer.approved.length)
          said.unshift(
            `Approved ${answer.approved.length === 1 ? `request ${answer.approved[0]!.id}` : `${answer.approved.length} requests`} into pool ${sitePools.find((p) => p.id === decision.poolId)?.name ?? decision.poolId}.`,
          );
        for (const id of answer.skipped) await explain(id);
      } else {
        // One call for the whole selection, as for approvals.
        const answer = await client.joinRequests.rejectMany.mutate({ ...ref, requestIds: targets, reason: decision.reason });
        decided.push(...answer.rejected);
        if (answer.rejected.length)
          said.unshift(`Rejected ${answer.rejected.length === 1 ? 'the request' : `${answer.rejected.length} requests`}.`);
        for (const id of answer.skipped) await explain(id);
      }
      onDecided(decided);
      setNotices((before) => [...said, ...before.filter((text) => !said.includes(text))]);
      select(new Set());
      setAction(null);
      moveOn(new Set([...targets, ...decided.map((record) => record.id)]));
    } catch (failure) {
      if (decided.length) onDecided(decided);
      setError(toApiError(failure).message);
    } finally {
      setPending(false);
      setProgress(null);
    }
  }

  /**
   * Decides every pending request that matched when the count was read (`createdUpTo`), a page of 200 per
   * call on the server, showing progress; it stops when nothing that matched is left.
   */
  async function decideAllMatching(
    decision: Decision,
    ref: { tenantId: string; poolId: string },
    reason: string | undefined,
    decided: JoinRequestRecord[],
    said: string[],
  ) {
    const { filter, total, asOf } = matching!;
    const by = { ...filter, createdUpTo: asOf };
    let done = 0;
    setProgress({ done, total });
    for (;;) {
      const [page, remaining] =
        decision.action === 'approve'
          ? await client.joinRequests.approveMany
              .mutate({
                ...ref,
                matching: by,
                ttlSeconds: decision.ttlSeconds,
                reason,
                ...(decision.labels ? { labels: decision.labels } : {}),
              })
              .then((a) => [[...a.approved, ...a.recorded], a.remaining] as const)
          : await client.joinRequests.rejectMany
              .mutate({ ...ref, matching: by, reason: decision.reason })
              .then((a) => [a.rejected, a.remaining] as const);
      decided.push(...page);
      done += page.length;
      setProgress({ done: Math.min(done, total), total });
      if (!page.length || remaining === 0) break;
    }
    const verb = decision.action === 'approve' ? 'Approved' : 'Rejected';
    said.unshift(
      `${verb} ${done} of ${total} matching requests${decision.action === 'approve' ? ` into pool ${sitePools.find((p) => p.id === decision.poolId)?.name ?? decision.poolId}` : ''}.`,
    );
    const recorded = decided.filter((r) => r.state === 'pending').length;
    if (recorded)
      said.push(
        `Recorded your approval of ${recorded} of them (1 of 2): not yet effective. Another person must approve them into the same pool.`,
      );
    if (done < total)
      said.push(
        `${total - done} were decided elsewhere, expired, or would be refused on retry (their token or the pool's policy), or you approved them first already, and were left as they are.`,
      );
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
      select(clickSelection(order, selected, anchor, current.id, false));
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
          <QueueActions
            selection={
              matchingCount !== null
                ? `All ${matchingCount} matching selected`
                : selectedRows.length
                  ? `${selectedRows.length} selected`
                  : current
                    ? `Current: ${current.id}`
                    : ''
            }
            count={matchingCount ?? (selectedRows.length > 1 ? selectedRows.length : null)}
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
        <div className="table-scroll">
          <table className="table">
            <caption className="visually-hidden">Join requests of site {pool.siteId}</caption>
            <QueueTableHead
              allSelected={allSelected}
              canDecide={canDecide}
              onSelectAll={() => select(allSelected ? new Set() : new Set(order))}
            />
            <tbody>
              {rows.map((row) => (
                <RequestRow
                  key={row.id}
                  row={row}
                  now={now}
                  isCurrent={row.id === current?.id}
                  isSelected={isAllMatching || selected.has(row.id)}
                  canDecide={canDecide}
                  onFocus={() => {
                    setCursor(row.id);
                    showDetail();
                  }}
                  onSelect={(shift) => {
                    select(clickSelection(order, selected, anchor, row.id, shift));
                    setAnchor(row.id);
                    setCursor(row.id);
                  }}
                  onDecide={(next) => {
                    setCursor(row.id);
                    open(next, row);
                  }}
                />
              ))}
            </tbody>
          </table>
        </div>
        {current && <RequestDetail request={current} now={now} tenantId={tenant.id} />}
      </div>
      <DecideDialog
        action={action}
        count={matchingCount ?? targets.length}
        isAllMatching={matchingCount !== null}
        notVendorCertified={notVendorCertified}
        progress={progress}
        pools={offeredPools}
        defaultPoolId={defaultPoolId}
        isPending={isPending}
        error={error}
        onDecide={(decision) => void decide(decision)}
        onClose={close}
      />
      <ShortcutsDialog open={isHelpOpen} onClose={() => setHelpOpen(false)} />
    </>
  );
}

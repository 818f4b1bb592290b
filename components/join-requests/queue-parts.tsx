'use client';

import { Dialog } from '@/components/ui/dialog';
import { QUEUE_SHORTCUTS } from '@/lib/join-request-queue';

/** What a decision would take, in words: every match, the selection, else the current request. */
export function selectionWords(allMatching: number | null, selected: number, current: string | null): string {
  if (allMatching !== null) return `All ${allMatching} matching selected`;
  if (selected) return `${selected} selected`;
  return current ? `Current: ${current}` : '';
}

interface QueueActionsProps {
  /** What the decision would take, in words ("3 selected", "Current: jreq_…"). */
  selection: string;
  /** How many the buttons name (a selection of several, or every match); null: the one request. */
  count: number | null;
  /** The label of "select all matching" when it is offered, else null. */
  selectMatching: string | null;
  isAllMatching: boolean;
  onSelectMatching: () => void;
  onClear: () => void;
  onDecide: (action: 'approve' | 'reject') => void;
}

/** The toolbar's selection and its Approve and Reject (with their shortcuts). */
export function QueueActions({ selection, count, selectMatching, isAllMatching, onSelectMatching, onClear, onDecide }: QueueActionsProps) {
  return (
    <div className="queue-actions">
      <span className="muted" data-testid="queue-selection">
        {selection}
      </span>
      {selectMatching && (
        <button type="button" className="btn btn-small btn-quiet" onClick={onSelectMatching}>
          {selectMatching}
        </button>
      )}
      {isAllMatching && (
        <button type="button" className="btn btn-small btn-quiet-neutral" onClick={onClear}>
          Clear selection
        </button>
      )}
      <button type="button" className="btn btn-small btn-primary" onClick={() => onDecide('approve')} aria-keyshortcuts="a">
        {count !== null ? `Approve ${count}` : 'Approve'}
      </button>
      <button type="button" className="btn btn-small btn-danger" onClick={() => onDecide('reject')} aria-keyshortcuts="r">
        {count !== null ? `Reject ${count}` : 'Reject'}
      </button>
    </div>
  );
}

/** `?`: the queue's keyboard shortcuts. */
export function ShortcutsDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
  return (
    <Dialog open={open} onClose={onClose} title="Keyboard shortcuts" size="small">
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
        <button type="button" className="btn" onClick={onClose} data-autofocus>
          Close
        </button>
      </footer>
    </Dialog>
  );
}

'use client';

import { Dialog } from '@/components/ui/dialog';
import { QUEUE_SHORTCUTS } from '@/lib/join-request-queue';

/** The queue's column headers; the first selects every request on the page. */
export function QueueTableHead({
  allSelected,
  canDecide,
  onSelectAll,
}: {
  allSelected: boolean;
  canDecide: boolean;
  onSelectAll: () => void;
}) {
  return (
    <thead>
      <tr>
        <th scope="col">
          <input type="checkbox" aria-label="Select all requests on this page" checked={allSelected} onChange={onSelectAll} />
        </th>
        <th scope="col">Request</th>
        <th scope="col">State</th>
        <th scope="col">Attestor</th>
        <th scope="col" className="col-machine" title="What the machine says about itself">
          Claimed
        </th>
        <th scope="col" className="col-mac" title="The MAC the boot step vouched for (the discovery token's lease)">
          Boot MAC
        </th>
        <th scope="col" className="col-vouched" title="What the boot step vouched for: the lease's IP and who minted the token">
          Boot step (IP · by)
        </th>
        <th scope="col">Hardware key</th>
        <th scope="col">Asked</th>
        <th scope="col">Expires</th>
        {canDecide && (
          <th scope="col" className="row-actions">
            Decide
          </th>
        )}
      </tr>
    </thead>
  );
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

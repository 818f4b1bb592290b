'use client';

import type { ReactNode } from 'react';
import { Dialog } from './dialog';

interface ConfirmDialogProps {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  pendingLabel: string;
  isPending: boolean;
  error?: string | null;
  tone?: 'danger' | 'primary';
  onConfirm: () => void;
  onClose: () => void;
}

/** Asks before an action that cannot be taken back from the console, and shows why it failed if it does. */
export function ConfirmDialog(props: ConfirmDialogProps) {
  const { open, title, children, confirmLabel, pendingLabel, isPending, error, tone = 'danger', onConfirm, onClose } = props;
  return (
    <Dialog open={open} onClose={isPending ? () => {} : onClose} title={title} size="small">
      <div className="dialog-body">{children}</div>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      <footer className="dialog-footer">
        {/* Focus starts on Cancel: Enter right after opening must not take an action that cannot be undone. */}
        <button type="button" className="btn" onClick={onClose} disabled={isPending} data-autofocus>
          Cancel
        </button>
        <button type="button" className={`btn btn-${tone}`} onClick={onConfirm} disabled={isPending}>
          {isPending ? pendingLabel : confirmLabel}
        </button>
      </footer>
    </Dialog>
  );
}

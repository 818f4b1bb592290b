'use client';

import { useState, type ReactNode } from 'react';
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

interface ConfirmButtonProps extends Omit<ConfirmDialogProps, 'open' | 'isPending' | 'error' | 'onConfirm' | 'onClose'> {
  /** The row button's text and accessible name. */
  label: string;
  ariaLabel: string;
  mutation: { isPending: boolean; error: unknown; reset: () => void };
  /** The error of the mutation, said for this action. */
  errorMessage: (error: unknown) => string;
  /** Starts the mutation; `close` is called once it succeeded (after the mutation's own onSuccess). */
  onConfirm: (close: () => void) => void;
}

/** A small button that opens a ConfirmDialog for `mutation`; the dialog closes when the mutation succeeds. */
export function ConfirmButton({ label, ariaLabel, mutation, errorMessage, onConfirm, ...dialog }: ConfirmButtonProps) {
  const [isConfirming, setConfirming] = useState(false);
  const close = () => setConfirming(false);
  return (
    <>
      <button type="button" className="btn btn-small btn-quiet" aria-label={ariaLabel} onClick={() => setConfirming(true)}>
        {label}
      </button>
      <ConfirmDialog
        {...dialog}
        open={isConfirming}
        isPending={mutation.isPending}
        error={mutation.error ? errorMessage(mutation.error) : null}
        onConfirm={() => onConfirm(close)}
        onClose={() => {
          mutation.reset();
          close();
        }}
      />
    </>
  );
}

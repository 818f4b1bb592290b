'use client';

import { useState, type ReactNode } from 'react';
import { Dialog } from './dialog';
import { Field } from './field';

interface ConfirmDialogProps {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  pendingLabel: string;
  isPending: boolean;
  error?: string | null;
  tone?: 'danger' | 'primary';
  /** Asks for a reason (kept in the audit log); `required` keeps the action disabled until one is written. */
  reason?: { label: string; hint?: string; required?: boolean; maxLength?: number; error?: string | null };
  /** The action cannot be taken as the dialog stands (a box to tick first); its button stays disabled. */
  cannotConfirm?: boolean;
  /** Called with the trimmed reason ('' when none is asked or given). */
  onConfirm: (reason: string) => void;
  onClose: () => void;
}

/** Asks before an action that cannot be taken back from the console, and shows why it failed if it does. */
export function ConfirmDialog(props: ConfirmDialogProps) {
  const { open, title, isPending, onClose } = props;
  return (
    <Dialog open={open} onClose={isPending ? () => {} : onClose} title={title} size="small">
      {/* The body mounts per opening, so a reason typed before does not come back. */}
      <ConfirmBody {...props} />
    </Dialog>
  );
}

function ConfirmBody(props: ConfirmDialogProps) {
  const { children, confirmLabel, pendingLabel, isPending, error, tone = 'danger', reason, cannotConfirm, onConfirm, onClose } = props;
  const [text, setText] = useState('');
  const isMissing = Boolean(reason?.required) && text.trim() === '';
  return (
    <>
      <div className="dialog-body">{children}</div>
      {reason && (
        <Field label={reason.label} hint={reason.hint} optional={!reason.required} error={reason.error}>
          {(control) => (
            <textarea
              {...control}
              rows={2}
              value={text}
              maxLength={reason.maxLength ?? 500}
              required={reason.required}
              onChange={(event) => setText(event.target.value)}
            />
          )}
        </Field>
      )}
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
        <button
          type="button"
          className={`btn btn-${tone}`}
          onClick={() => onConfirm(text.trim())}
          disabled={isPending || isMissing || cannotConfirm}
        >
          {isPending ? pendingLabel : confirmLabel}
        </button>
      </footer>
    </>
  );
}

interface ConfirmButtonProps extends Omit<ConfirmDialogProps, 'open' | 'isPending' | 'error' | 'cannotConfirm' | 'onConfirm' | 'onClose'> {
  /** The row button's text and accessible name. */
  label: string;
  ariaLabel: string;
  mutation: { isPending: boolean; error: unknown; reset: () => void };
  /** The error of the mutation, said for this action. */
  errorMessage: (error: unknown) => string;
  /** Starts the mutation; `close` is called once it succeeded (after the mutation's own onSuccess). */
  onConfirm: (close: () => void, reason: string) => void;
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
        onConfirm={(reason) => onConfirm(close, reason)}
        onClose={() => {
          mutation.reset();
          close();
        }}
      />
    </>
  );
}

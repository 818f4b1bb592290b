'use client';

import type { FormEvent, ReactNode } from 'react';
import { Dialog } from './dialog';

interface FormDialogProps {
  open: boolean;
  title: string;
  description?: ReactNode;
  size?: 'small' | 'medium';
  /** The form's fields. Mark the first with `data-autofocus`. */
  children: ReactNode;
  submitLabel: string;
  /** The submit button's text while the request runs ("Creating…"). */
  pendingLabel: string;
  isPending: boolean;
  /** The submit button's look: `danger` for a form that takes a final action (a rejection). */
  tone?: 'primary' | 'danger';
  /** The form cannot be sent yet (nothing to choose from); the button stays disabled. */
  cannotSubmit?: boolean;
  /** The server's message for the whole form (field errors belong under their fields). */
  error?: string | null;
  onSubmit: () => void;
  onClose: () => void;
}

/**
 * A dialog holding one form: title, fields, Cancel and a submit button that says the request is running and
 * cannot be pressed twice; the server's error is shown in the dialog, above the fields, and announced.
 */
export function FormDialog(props: FormDialogProps) {
  const {
    open,
    title,
    description,
    size,
    children,
    submitLabel,
    pendingLabel,
    isPending,
    tone = 'primary',
    error,
    onSubmit,
    onClose,
  } = props;
  return (
    <Dialog open={open} onClose={isPending ? () => {} : onClose} title={title} description={description} size={size}>
      <form
        className="form"
        aria-busy={isPending}
        noValidate
        onSubmit={(event: FormEvent<HTMLFormElement>) => {
          event.preventDefault();
          if (!isPending) onSubmit();
        }}
      >
        {error && (
          <p className="form-error" role="alert">
            {error}
          </p>
        )}
        {children}
        <footer className="dialog-footer">
          <button type="button" className="btn" onClick={onClose} disabled={isPending}>
            Cancel
          </button>
          <button type="submit" className={`btn btn-${tone}`} disabled={isPending || props.cannotSubmit}>
            {isPending ? pendingLabel : submitLabel}
          </button>
        </footer>
      </form>
    </Dialog>
  );
}

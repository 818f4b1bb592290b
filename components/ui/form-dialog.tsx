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
  /** The other button's text ("Cancel"). */
  cancelLabel?: string;
  /** Focus starts on that button (a form with nothing to fill in, whose Enter must not act at once). */
  focusCancel?: boolean;
  /**
   * The form's own checks, run on each submit before `onSubmit`: false keeps the form from being sent, and
   * once the errors are rendered the first invalid control takes the focus.
   */
  validate?: () => boolean;
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
    cancelLabel = 'Cancel',
    validate,
    onSubmit,
    onClose,
  } = props;
  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (isPending) return;
    if (validate && !validate()) {
      const form = event.currentTarget;
      requestAnimationFrame(() => form.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus());
      return;
    }
    onSubmit();
  }
  // noValidate: errors show in the form's own style, all of them, rather than one browser bubble at a time.
  return (
    <Dialog open={open} onClose={isPending ? () => {} : onClose} title={title} description={description} size={size}>
      <form className="form" aria-busy={isPending} noValidate onSubmit={submit}>
        {error && (
          <p className="form-error" role="alert">
            {error}
          </p>
        )}
        {children}
        <footer className="dialog-footer">
          <button type="button" className="btn" onClick={onClose} disabled={isPending} data-autofocus={props.focusCancel || undefined}>
            {cancelLabel}
          </button>
          <button type="submit" className={`btn btn-${tone}`} disabled={isPending || props.cannotSubmit}>
            {isPending ? pendingLabel : submitLabel}
          </button>
        </footer>
      </form>
    </Dialog>
  );
}

'use client';

import { useEffect, useId, useLayoutEffect, useRef, type ReactNode } from 'react';

interface DialogProps {
  open: boolean;
  /** Called on Escape, on the close button and by the caller's own cancel buttons. */
  onClose: () => void;
  title: string;
  description?: ReactNode;
  children: ReactNode;
  /** Wider body for forms with several columns. */
  size?: 'small' | 'medium';
}

/**
 * A modal on the native <dialog> element: the browser traps focus, makes the page behind it inert and
 * gives it the dialog role. The body mounts only while open, so each opening starts from a fresh form;
 * the element marked `data-autofocus` in it takes the focus.
 */
export function Dialog({ open, onClose, title, description, children, size = 'medium' }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const descriptionId = useId();

  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) {
      dialog.showModal();
      // showModal() focuses the first focusable element (the close button); the body names a better one.
      dialog.querySelector<HTMLElement>('[data-autofocus]')?.focus();
    }
    if (!open && dialog.open) dialog.close();
  }, [open]);

  useLayoutEffect(() => {
    const dialog = ref.current;
    // Unmounted while open (a form that mounts per opening): closed before it leaves the page, so the
    // browser gives the focus back to the opener as it does on close().
    return () => {
      if (dialog?.open) dialog.close();
    };
  }, []);

  return (
    <dialog
      ref={ref}
      className={`dialog dialog-${size}`}
      aria-labelledby={titleId}
      aria-describedby={description ? descriptionId : undefined}
      onCancel={(event) => {
        // Escape: let React state decide, so the dialog and `open` never disagree.
        event.preventDefault();
        onClose();
      }}
    >
      {open && (
        <>
          <header className="dialog-header">
            <h2 id={titleId}>{title}</h2>
            <button type="button" className="icon-button" aria-label="Close" onClick={onClose}>
              <span aria-hidden="true">×</span>
            </button>
          </header>
          {description && (
            <p id={descriptionId} className="dialog-description">
              {description}
            </p>
          )}
          {children}
        </>
      )}
    </dialog>
  );
}

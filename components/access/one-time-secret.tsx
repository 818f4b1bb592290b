'use client';

import { useId, useRef, useState } from 'react';
import { Dialog } from '@/components/ui/dialog';
import { downloadText } from '@/lib/unsaved-guard';

type CopyState = 'idle' | 'copied' | 'selected' | 'downloaded';

interface OneTimeSecretDialogProps {
  /** The secret to show; null closes the dialog (and drops the secret from the page). */
  secret: string | null;
  title: string;
  /** What the field holds: "Invitation link", "API key". */
  label: string;
  fileName: string;
  children: React.ReactNode;
  onDone: () => void;
}

/**
 * A secret right after the server made it, as join tokens are shown: once, in React state only (never the
 * query cache, the URL or storage), with Copy and Download; Done drops it for good (only its hash is kept).
 * Closing before a copy asks first, since nobody can show it again.
 */
export function OneTimeSecretDialog({ secret, title, label, fileName, children, onDone }: OneTimeSecretDialogProps) {
  const [copyState, setCopyState] = useState<CopyState>('idle');
  const [isAsking, setAsking] = useState(false);
  const inputId = useId();
  const inputRef = useRef<HTMLInputElement>(null);
  const isSaved = copyState === 'copied' || copyState === 'downloaded';
  const done = () => {
    setCopyState('idle');
    setAsking(false);
    onDone();
  };
  const close = () => (isSaved ? done() : setAsking(true));

  async function copy(value: string) {
    try {
      await navigator.clipboard.writeText(value);
      setCopyState('copied');
    } catch {
      // No clipboard API outside secure contexts: the selection is one Ctrl+C away.
      inputRef.current?.focus();
      inputRef.current?.select();
      setCopyState('selected');
    }
  }

  return (
    <Dialog open={secret !== null} onClose={close} title={title} size="medium">
      {secret !== null && (
        <div className="dialog-body one-time-body">
          <p className="one-time-warning" role="note">
            <strong>Copy it now: it is shown only once and never again.</strong> Better Compute keeps only a hash of it.
          </p>
          {children}
          <div className="token-field">
            <label htmlFor={inputId} className="field-label">
              {label}
            </label>
            <div className="token-field-row">
              <input
                ref={inputRef}
                id={inputId}
                className="input-mono token-value"
                readOnly
                value={secret}
                autoComplete="off"
                spellCheck={false}
                data-autofocus
                onFocus={(event) => event.currentTarget.select()}
                onCopy={() => setCopyState('copied')}
              />
              <button type="button" className="btn" onClick={() => void copy(secret)}>
                {copyState === 'copied' ? 'Copied' : 'Copy'}
              </button>
              <button
                type="button"
                className="btn"
                onClick={() => {
                  downloadText(fileName, `${secret}\n`);
                  setCopyState('downloaded');
                }}
              >
                Download as file
              </button>
            </div>
            <p className="field-hint" role="status" aria-live="polite">
              {copyState === 'copied'
                ? 'Copied to the clipboard.'
                : copyState === 'downloaded'
                  ? `Downloaded as ${fileName}.`
                  : copyState === 'selected'
                    ? 'The browser did not allow copying: the text is selected, press Ctrl+C (⌘C on a Mac).'
                    : ''}
            </p>
          </div>
          {isAsking && (
            <p className="form-error" role="alert">
              You have not copied or downloaded it. Once this dialog closes nobody can show it again. Close anyway?
            </p>
          )}
          <footer className="dialog-footer">
            {isAsking ? (
              <>
                <button type="button" className="btn" onClick={() => setAsking(false)}>
                  Keep it open
                </button>
                <button type="button" className="btn btn-danger" onClick={done}>
                  Discard
                </button>
              </>
            ) : (
              <button type="button" className="btn btn-primary" onClick={close}>
                Done
              </button>
            )}
          </footer>
        </div>
      )}
    </Dialog>
  );
}

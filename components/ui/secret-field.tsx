'use client';

import { useId, useRef } from 'react';
import { downloadText } from '@/lib/unsaved-guard';

export type CopyState = 'idle' | 'copied' | 'selected' | 'downloaded';

interface SecretFieldProps {
  /** What the field holds: "Join token", "Invitation link", "API key". */
  label: string;
  value: string;
  /** The download's file name: the value and a newline, the same bytes as the CLI's --out. */
  fileName: string;
  copyState: CopyState;
  onCopyState: (state: CopyState) => void;
  /** The status line after a download. */
  downloadedHint: string;
  /** How the status line names the value when the browser refused the clipboard ("token", "text"). */
  selectedNoun: string;
  /** The dialog focuses this field when it opens. */
  autoFocus?: boolean;
}

/** A secret shown once, read-only, with Copy and Download and a live status line (join tokens, invitations, API keys). */
export function SecretField({ label, value, fileName, copyState, onCopyState, downloadedHint, selectedNoun, autoFocus }: SecretFieldProps) {
  const inputId = useId();
  const inputRef = useRef<HTMLInputElement>(null);

  async function copy() {
    try {
      // Absent outside secure contexts (a console reached over plain HTTP), and may be refused by permission.
      await navigator.clipboard.writeText(value);
      onCopyState('copied');
    } catch {
      // Selected text is one Ctrl+C away, and keyboard copy works where the clipboard API does not.
      inputRef.current?.focus();
      inputRef.current?.select();
      onCopyState('selected');
    }
  }

  return (
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
          value={value}
          autoComplete="off"
          spellCheck={false}
          data-autofocus={autoFocus || undefined}
          onFocus={(event) => event.currentTarget.select()}
          // Ctrl+C in the field is a copy too.
          onCopy={() => onCopyState('copied')}
        />
        <button type="button" className="btn" onClick={() => void copy()}>
          {copyState === 'copied' ? 'Copied' : 'Copy'}
        </button>
        <button
          type="button"
          className="btn"
          onClick={() => {
            downloadText(fileName, `${value}\n`);
            onCopyState('downloaded');
          }}
        >
          Download as file
        </button>
      </div>
      <p className="field-hint" role="status" aria-live="polite">
        {copyState === 'copied'
          ? 'Copied to the clipboard.'
          : copyState === 'downloaded'
            ? downloadedHint
            : copyState === 'selected'
              ? `The browser did not allow copying: the ${selectedNoun} is selected, press Ctrl+C (⌘C on a Mac).`
              : ''}
      </p>
    </div>
  );
}

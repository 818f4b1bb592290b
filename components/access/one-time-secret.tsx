'use client';

import { useState } from 'react';
import { Dialog } from '@/components/ui/dialog';
import { SecretField, type CopyState } from '@/components/ui/secret-field';

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
  const isSaved = copyState === 'copied' || copyState === 'downloaded';
  const done = () => {
    setCopyState('idle');
    setAsking(false);
    onDone();
  };
  const close = () => (isSaved ? done() : setAsking(true));

  return (
    <Dialog open={secret !== null} onClose={close} title={title} size="medium">
      {secret !== null && (
        <div className="dialog-body one-time-body">
          <p className="one-time-warning" role="note">
            <strong>Copy it now: it is shown only once and never again.</strong> Better Compute keeps only a hash of it.
          </p>
          {children}
          <SecretField
            label={label}
            value={secret}
            fileName={fileName}
            copyState={copyState}
            onCopyState={setCopyState}
            downloadedHint={`Downloaded as ${fileName}.`}
            selectedNoun="text"
            autoFocus
          />
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

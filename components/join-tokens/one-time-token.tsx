'use client';

import { useEffect, useId, useRef, useState } from 'react';
import { formatTimestamp } from '@/components/ui/format';
import { expectEntries, type JoinToken } from '@/lib/join-token-form';

export interface MintedToken {
  record: JoinToken;
  /** The bearer `bcjt_…`; null when the create call was a replay, whose answer never carries it. */
  token: string | null;
  poolName: string;
}

type CopyState = 'idle' | 'copied' | 'selected';

/**
 * The token right after it was minted. It is held in React state only (never the query cache, the URL,
 * storage or a log line), and Done drops it: the control plane keeps only its hash, so it is gone for good.
 */
export function OneTimeToken({ minted, onDone }: { minted: MintedToken; onDone: () => void }) {
  const { record, token, poolName } = minted;
  const headingId = useId();
  const panelRef = useRef<HTMLElement>(null);

  useEffect(() => {
    // The token field when there is one: focusing selects it, one Ctrl+C from the clipboard.
    const target = panelRef.current?.querySelector<HTMLElement>('.token-value') ?? panelRef.current;
    target?.focus();
    panelRef.current?.scrollIntoView({ block: 'nearest' });
  }, [record.id]);

  const pinned = expectEntries(record.expect);
  return (
    <section ref={panelRef} tabIndex={-1} className={`panel one-time${token ? '' : ' one-time-replay'}`} aria-labelledby={headingId}>
      <header className="panel-header">
        <h2 id={headingId}>{token ? 'New join token' : 'Join token already created'}</h2>
        <code className="id" title="Token id">
          {record.id}
        </code>
        <span className="panel-meta">
          pool {poolName} · {record.usesLeft} / {record.maxUses} {record.maxUses === 1 ? 'use' : 'uses'} · expires {formatTimestamp(record.expiresAt)}
          {pinned.length > 0 && <> · pinned to {pinned.map((entry) => `${entry.label} ${entry.value}`).join(', ')}</>}
        </span>
      </header>
      <div className="one-time-body">
        {token ? (
          <>
            <p className="one-time-warning" role="note">
              <strong>Copy this token now: it is shown only once and never again.</strong> Better Compute keeps only a hash of its secret, so nobody can show
              it to you later. Hand it to the machine out of band; anyone holding it can join a machine to this pool until it expires or is revoked.
            </p>
            <TokenField token={token} />
          </>
        ) : (
          <p className="one-time-warning" role="note">
            <strong>This form had already created token {record.id}; its secret cannot be shown again.</strong> If you do not have the token, revoke it and
            create a new one.
          </p>
        )}
        <div className="one-time-actions">
          <button type="button" className="btn btn-primary" onClick={onDone}>
            Done
          </button>
          {token && <span className="field-hint">Done discards the token from this page.</span>}
        </div>
      </div>
    </section>
  );
}

function TokenField({ token }: { token: string }) {
  const inputId = useId();
  const inputRef = useRef<HTMLInputElement>(null);
  const [copyState, setCopyState] = useState<CopyState>('idle');

  async function copy() {
    try {
      // Absent outside secure contexts (a console reached over plain HTTP), and may be refused by permission.
      await navigator.clipboard.writeText(token);
      setCopyState('copied');
    } catch {
      // Selected text is one Ctrl+C away, and keyboard copy works where the clipboard API does not.
      inputRef.current?.focus();
      inputRef.current?.select();
      setCopyState('selected');
    }
  }

  return (
    <div className="token-field">
      <label htmlFor={inputId} className="field-label">
        Join token
      </label>
      <div className="token-field-row">
        <input
          ref={inputRef}
          id={inputId}
          className="input-mono token-value"
          readOnly
          value={token}
          autoComplete="off"
          spellCheck={false}
          onFocus={(event) => event.currentTarget.select()}
        />
        <button type="button" className="btn" onClick={() => void copy()}>
          {copyState === 'copied' ? 'Copied' : 'Copy'}
        </button>
      </div>
      <p className="field-hint" role="status" aria-live="polite">
        {copyState === 'copied' ? 'Copied to the clipboard.' : copyState === 'selected' ? 'The browser did not allow copying: the token is selected, press Ctrl+C (⌘C on a Mac).' : ''}
      </p>
    </div>
  );
}

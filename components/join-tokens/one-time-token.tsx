'use client';

import { useRouter } from 'next/navigation';
import { useEffect, useId, useRef, useState } from 'react';
import { ConfirmDialog } from '@/components/ui/confirm-dialog';
import { formatTimestamp } from '@/components/ui/format';
import { useUnsavedGuard } from '@/lib/unsaved-guard';
import { SecretField, type CopyState } from '@/components/ui/secret-field';
import { expectEntries, type JoinToken } from '@/lib/join-token-form';

export interface MintedToken {
  record: JoinToken;
  /** The bearer `bcjt_…`; null when the create call was a replay, whose answer never carries it. */
  token: string | null;
  poolName: string;
}

/** The file name the CLI's `join-tokens create --out` suggests, and the one install-bcd.sh reads from stdin. */
const TOKEN_FILE_NAME = 'join-token';

/**
 * The token right after it was minted. It is held in React state only (never the query cache, the URL,
 * storage or a log line), and Done drops it: the control plane keeps only its hash, so it is gone for good.
 */
export function OneTimeToken({ minted, onDone }: { minted: MintedToken; onDone: () => void }) {
  const { record, token, poolName } = minted;
  const headingId = useId();
  const panelRef = useRef<HTMLElement>(null);
  const router = useRouter();
  const [copyState, setCopyState] = useState<CopyState>('idle');
  // Where the operator was going when asked (null: Done); undefined while no question is open.
  const [leavingTo, setLeavingTo] = useState<string | null | undefined>(undefined);
  // Copied or downloaded: a copy exists outside this page. A selection alone is not proof of a copy.
  const isSaved = copyState === 'copied' || copyState === 'downloaded';
  const isAtRisk = token !== null && !isSaved;

  useUnsavedGuard(isAtRisk, (href) => setLeavingTo(href), panelRef);

  useEffect(() => {
    // The token field when there is one: focusing selects it, one Ctrl+C from the clipboard.
    const target = panelRef.current?.querySelector<HTMLElement>('.token-value') ?? panelRef.current;
    target?.focus();
    panelRef.current?.scrollIntoView({ block: 'nearest' });
  }, [record.id]);

  function leave(destination: string | null) {
    setLeavingTo(undefined);
    onDone();
    if (destination) router.push(destination);
  }

  const pinned = expectEntries(record.expect);
  return (
    <section ref={panelRef} tabIndex={-1} className={`panel one-time${token ? '' : ' one-time-replay'}`} aria-labelledby={headingId}>
      <header className="panel-header">
        <h2 id={headingId}>{token ? 'New join token' : 'Join token already created'}</h2>
        <code className="id" title="Token id">
          {record.id}
        </code>
        <span className="panel-meta">
          pool {poolName} · {record.usesLeft} / {record.maxUses} {record.maxUses === 1 ? 'use' : 'uses'} · expires{' '}
          {formatTimestamp(record.expiresAt)}
          {pinned.length > 0 && <> · pinned to {pinned.map((entry) => `${entry.label} ${entry.value}`).join(', ')}</>}
          {record.allowReclaim && <> · reclaim allowed</>}
          {record.hosted && <> · hosted on {record.hosted}</>}
        </span>
      </header>
      <div className="one-time-body">
        {token ? (
          <>
            <p className="one-time-warning" role="note">
              <strong>Copy this token now: it is shown only once and never again.</strong> Better Compute keeps only a hash of its secret,
              so nobody can show it to you later. Hand it to the machine out of band; anyone holding it can join a machine to this pool
              until it expires or is revoked.
            </p>
            <SecretField
              label="Join token"
              value={token}
              fileName={TOKEN_FILE_NAME}
              copyState={copyState}
              onCopyState={setCopyState}
              downloadedHint={`Downloaded as ${TOKEN_FILE_NAME}. Move it to the machine, keep it readable by root only, and delete other copies.`}
              selectedNoun="token"
            />
            <div className="next-step">
              <p className="field-label">Next step, on the machine</p>
              <p className="field-hint">
                Save the token as a file only root can read (<code>chmod 600 {TOKEN_FILE_NAME}</code>), then run the install script with it
                on standard input:
              </p>
              <pre className="command">
                <code>sudo sh install-bcd.sh &lt; {TOKEN_FILE_NAME}</code>
              </pre>
            </div>
          </>
        ) : (
          <p className="one-time-warning" role="note">
            <strong>This form had already created token {record.id}; its secret cannot be shown again.</strong> If you do not have the
            token, revoke it and create a new one.
          </p>
        )}
        <div className="one-time-actions">
          <button type="button" className="btn btn-primary" onClick={() => (isAtRisk ? setLeavingTo(null) : onDone())}>
            Done
          </button>
          {token && <span className="field-hint">Done discards the token from this page.</span>}
        </div>
      </div>
      <ConfirmDialog
        open={leavingTo !== undefined}
        title="Discard the join token?"
        confirmLabel="Discard token"
        pendingLabel="Discarding…"
        isPending={false}
        onConfirm={() => leave(leavingTo ?? null)}
        onClose={() => setLeavingTo(undefined)}
      >
        <p>
          You have not copied or downloaded token <code className="id">{record.id}</code>. Once it leaves this page nobody can show it
          again: you would have to revoke it and create another. This cannot be undone.
        </p>
      </ConfirmDialog>
    </section>
  );
}

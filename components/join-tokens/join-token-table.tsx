'use client';

import { keepPreviousData, useInfiniteQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { formatTimestamp } from '@/components/ui/format';
import { LoadingRows, LoadMore, QueryError } from '@/components/ui/query-state';
import { joinTokensListInput, nextListPage } from '@/lib/console-page-inputs';
import type { Pool, Tenant } from '@/lib/api-types';
import { expectEntries, formatAge, formatRelative, type JoinToken, type JoinTokenState } from '@/lib/join-token-form';
import { can } from '@/lib/can';
import { useLiveRefresh } from '@/lib/live';
import { useTRPC } from '@/lib/trpc';
import { useNowSince } from '@/lib/use-now';
import { RevokeJoinTokenButton } from './revoke-join-token-button';
import { actionsColumn, nameColumn } from '@/components/ui/data-columns';
import { DataTable, type DataColumn } from '@/components/ui/data-table';

const STATE_LABELS: Record<JoinTokenState, string> = { live: 'Live', revoked: 'Revoked', expired: 'Expired', 'used-up': 'Used up' };

interface JoinTokenTableProps {
  tenant: Tenant;
  pool: Pool;
  siteName: string;
  includeInactive: boolean;
}

/** A pool's tokens, newest first, a page at a time; live ones only unless `includeInactive`. */
export function JoinTokenTable({ tenant, pool, siteName, includeInactive }: JoinTokenTableProps) {
  const trpc = useTRPC();
  const tokens = useInfiniteQuery(
    trpc.joinTokens.list.infiniteQueryOptions(
      joinTokensListInput(tenant.id, pool.id, includeInactive),
      // Toggling "Show inactive" keeps the rows on screen until the other list arrives.
      { getNextPageParam: nextListPage, placeholderData: keepPreviousData },
    ),
  );
  const now = useNowSince(tokens.dataUpdatedAt);
  // A join spends a use, another operator may revoke: both happen away from this page.
  useLiveRefresh(trpc.joinTokens.list.pathFilter(), { eventsOf: tenant.id });
  // What the operator's own revoke did, said once the list shows it.
  const [notice, setNotice] = useState<string | null>(null);
  const items = tokens.data?.pages.flatMap((page) => page.items) ?? [];
  const headingId = `pool-${pool.id}`;
  const what = includeInactive ? 'token' : 'live token';

  return (
    <section className="panel" aria-labelledby={headingId} aria-busy={tokens.isPlaceholderData || tokens.isFetchingNextPage}>
      <header className="panel-header">
        <h2 id={headingId}>
          <span className="panel-eyebrow">Pool </span>
          {pool.name}
        </h2>
        <span className="badge" title="Site">
          site {siteName}
        </span>
        <code className="id" title="Pool id">
          {pool.id}
        </code>
        {tokens.isSuccess && !tokens.isPlaceholderData && (
          <span className="panel-meta">
            {items.length}
            {tokens.hasNextPage ? '+' : ''} {items.length === 1 ? what : `${what}s`}
          </span>
        )}
      </header>
      <p className="panel-notice" role="status">
        {notice}
      </p>
      {tokens.isPending ? (
        <div className="panel-empty">
          <LoadingRows label="Loading join tokens…" />
        </div>
      ) : tokens.isError ? (
        <QueryError error={tokens.error} what="join tokens" onRetry={() => void tokens.refetch()} />
      ) : items.length === 0 ? (
        <p className="panel-empty">
          {includeInactive
            ? 'No join token was ever created for this pool.'
            : 'No live join tokens. Create one to let a machine join this pool.'}
        </p>
      ) : (
        <DataTable
          rows={items}
          columns={tokenColumns(tenant, now, (id) => setNotice(`Token ${id} revoked: it no longer admits any machine.`))}
          rowKey={(token) => token.id}
          rowClassName={(token) => (token.state === 'live' ? undefined : 'row-archived')}
          label={`Join tokens of pool ${pool.name}`}
          caption={`Join tokens of pool ${pool.name}`}
          stale={tokens.isPlaceholderData}
        />
      )}
      <LoadMore query={tokens} label="Load more" />
    </section>
  );
}

const timeCell = (iso: string) => (
  <time dateTime={iso} title={iso}>
    {formatTimestamp(iso, { zone: false })}
  </time>
);

function tokenColumns(tenant: Tenant, now: number, onRevoked: (tokenId: string) => void): DataColumn<JoinToken>[] {
  return [
    nameColumn('Token ID', (token) => (
      <>
        <code className="token-id">{token.id}</code>
        {token.name && (
          <span className="cell-sub" title={token.description ?? undefined}>
            {token.name}
          </span>
        )}
      </>
    )),
    { id: 'state', header: 'State', cell: (token) => <StateCell token={token} /> },
    {
      id: 'uses',
      header: 'Uses left',
      className: 'cell-number',
      cell: (token) => (
        <>
          {token.usesLeft} / {token.maxUses}
        </>
      ),
    },
    {
      id: 'expires',
      header: 'Expires (UTC)',
      className: 'cell-time',
      cell: (token) => (
        <>
          {timeCell(token.expiresAt)}
          {token.state === 'live' && <span className="cell-sub">{formatRelative(token.expiresAt, now)}</span>}
        </>
      ),
    },
    { id: 'pinned', header: 'Pinned to', className: 'cell-wrap', cell: (token) => <PinnedCell token={token} /> },
    {
      id: 'reclaim',
      header: 'Reclaim',
      cell: (token) => (token.allowReclaim ? <span className="badge badge-warn">allowed</span> : <span className="muted">no</span>),
    },
    {
      id: 'hosted',
      header: 'Hosted',
      cell: (token) => (token.hosted ? <span className="badge badge-info">{token.hosted}</span> : <span className="muted">no</span>),
    },
    {
      id: 'used',
      header: 'Last used',
      className: 'cell-time',
      cell: (token) =>
        token.lastUsedAt ? (
          <time dateTime={token.lastUsedAt} title={token.lastUsedAt}>
            {formatAge(token.lastUsedAt, now)}
          </time>
        ) : (
          <span className="muted">never</span>
        ),
    },
    {
      id: 'created',
      header: 'Created (UTC)',
      className: 'cell-time',
      cell: (token) => (
        <>
          {timeCell(token.createdAt)}
          <span className="cell-sub" title={token.createdBy}>
            by {token.createdByEmail ?? token.createdBy}
          </span>
        </>
      ),
    },
    actionsColumn(
      (token) =>
        token.state === 'live' &&
        token.poolId &&
        can(tenant, 'compute:join-tokens:revoke') && (
          <RevokeJoinTokenButton token={token} poolId={token.poolId} tenant={tenant} onRevoked={onRevoked} />
        ),
    ),
  ];
}

function StateCell({ token }: { token: JoinToken }) {
  return (
    <>
      <span className={`status status-${token.state}`} title={token.revokedAt ? `Revoked ${formatTimestamp(token.revokedAt)}` : undefined}>
        {STATE_LABELS[token.state]}
      </span>
      {token.revokedAt && (
        <span className="cell-sub">
          by {token.revokedByEmail ?? token.revokedBy ?? 'unknown'}, {formatTimestamp(token.revokedAt)}
        </span>
      )}
    </>
  );
}

function PinnedCell({ token }: { token: JoinToken }) {
  const pinned = expectEntries(token.expect);
  if (!pinned.length) return <span className="muted">any machine</span>;
  return (
    <ul className="tags">
      {pinned.map((entry) => (
        <li key={entry.key} className="tag">
          <span className="tag-key">{entry.label}</span> <span>{entry.value}</span>
        </li>
      ))}
    </ul>
  );
}

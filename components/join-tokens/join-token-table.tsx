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
import { TableScroll } from '@/components/ui/table-scroll';

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
        <TableScroll label={`Join tokens of pool ${pool.name}`} stale={tokens.isPlaceholderData}>
          <table className="table">
            <caption className="visually-hidden">Join tokens of pool {pool.name}</caption>
            <thead>
              <tr>
                <th scope="col">Token ID</th>
                <th scope="col">State</th>
                <th scope="col">Uses left</th>
                <th scope="col">Expires (UTC)</th>
                <th scope="col">Pinned to</th>
                <th scope="col">Reclaim</th>
                <th scope="col">Hosted</th>
                <th scope="col">Last used</th>
                <th scope="col">Created (UTC)</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((token) => (
                <JoinTokenRow
                  key={token.id}
                  token={token}
                  tenant={tenant}
                  now={now}
                  onRevoked={(id) => setNotice(`Token ${id} revoked: it no longer admits any machine.`)}
                />
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
      <LoadMore query={tokens} label="Load more" />
    </section>
  );
}

interface JoinTokenRowProps {
  token: JoinToken;
  tenant: Tenant;
  now: number;
  onRevoked: (tokenId: string) => void;
}

function JoinTokenRow({ token, tenant, now, onRevoked }: JoinTokenRowProps) {
  const pinned = expectEntries(token.expect);
  const isLive = token.state === 'live';
  return (
    <tr className={isLive ? undefined : 'row-archived'}>
      <th scope="row" className="cell-name">
        <code className="token-id">{token.id}</code>
        {token.name && (
          <span className="cell-sub" title={token.description ?? undefined}>
            {token.name}
          </span>
        )}
      </th>
      <td>
        <span
          className={`status status-${token.state}`}
          title={token.revokedAt ? `Revoked ${formatTimestamp(token.revokedAt)}` : undefined}
        >
          {STATE_LABELS[token.state]}
        </span>
        {token.revokedAt && (
          <span className="cell-sub">
            by {token.revokedByEmail ?? token.revokedBy ?? 'unknown'}, {formatTimestamp(token.revokedAt)}
          </span>
        )}
      </td>
      <td className="cell-number">
        {token.usesLeft} / {token.maxUses}
      </td>
      <td className="cell-time">
        <time dateTime={token.expiresAt} title={token.expiresAt}>
          {formatTimestamp(token.expiresAt, { zone: false })}
        </time>
        {isLive && <span className="cell-sub">{formatRelative(token.expiresAt, now)}</span>}
      </td>
      <td className="cell-wrap">
        {pinned.length ? (
          <ul className="tags">
            {pinned.map((entry) => (
              <li key={entry.key} className="tag">
                <span className="tag-key">{entry.label}</span> <span>{entry.value}</span>
              </li>
            ))}
          </ul>
        ) : (
          <span className="muted">any machine</span>
        )}
      </td>
      <td>{token.allowReclaim ? <span className="badge badge-warn">allowed</span> : <span className="muted">no</span>}</td>
      <td>{token.hosted ? <span className="badge badge-info">{token.hosted}</span> : <span className="muted">no</span>}</td>
      <td className="cell-time">
        {token.lastUsedAt ? (
          <time dateTime={token.lastUsedAt} title={token.lastUsedAt}>
            {formatAge(token.lastUsedAt, now)}
          </time>
        ) : (
          <span className="muted">never</span>
        )}
      </td>
      <td className="cell-time">
        <time dateTime={token.createdAt} title={token.createdAt}>
          {formatTimestamp(token.createdAt, { zone: false })}
        </time>
        <span className="cell-sub" title={token.createdBy}>
          by {token.createdByEmail ?? token.createdBy}
        </span>
      </td>
      <td className="cell-actions">
        {isLive && token.poolId && can(tenant, 'compute:join-tokens:revoke') && (
          <RevokeJoinTokenButton token={token} poolId={token.poolId} tenant={tenant} onRevoked={onRevoked} />
        )}
      </td>
    </tr>
  );
}

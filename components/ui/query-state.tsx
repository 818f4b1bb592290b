import type { ReactNode } from 'react';
import { toApiError } from '@/lib/api-errors';

export function LoadingRows({ label }: { label: string }) {
  return (
    <p className="muted loading" role="status">
      {label}
    </p>
  );
}

/** A list's error state: what failed, in words, and a Retry that runs the query again. */
export function QueryError({ error, what, onRetry }: { error: unknown; what: string; onRetry?: () => void }) {
  return (
    <div className="callout callout-error query-error" role="alert">
      <span>
        <strong>Could not load {what}.</strong> {toApiError(error).message}
      </span>
      {onRetry && (
        <button type="button" className="btn btn-small" onClick={onRetry}>
          Retry
        </button>
      )}
    </div>
  );
}

/** The footer of a paged list: fetches the next page while there is one. */
export function LoadMore({
  query,
  label,
}: {
  query: { hasNextPage: boolean; isFetchingNextPage: boolean; fetchNextPage: () => Promise<unknown> };
  label: string;
}) {
  if (!query.hasNextPage) return null;
  return (
    <footer className="panel-footer">
      <button type="button" className="btn btn-small" onClick={() => void query.fetchNextPage()} disabled={query.isFetchingNextPage}>
        {query.isFetchingNextPage ? 'Loading…' : label}
      </button>
    </footer>
  );
}

/**
 * A list page's states in one place: loading, an error with Retry, the empty callout, else `children` with
 * the items. The list pages (nodes, events, refused joins, audit) render their tables through it.
 */
export function QueryStates<T>({
  query,
  items,
  loading,
  what,
  empty,
  children,
}: {
  query: { isPending: boolean; isError: boolean; error: unknown; refetch: () => Promise<unknown> };
  items: T[];
  /** "Loading nodes…" */
  loading: string;
  /** What failed to load, after "Could not load". */
  what: string;
  empty: ReactNode;
  children: (items: T[]) => ReactNode;
}) {
  if (query.isPending) return <LoadingRows label={loading} />;
  if (query.isError) return <QueryError error={query.error} what={what} onRetry={() => void query.refetch()} />;
  if (items.length === 0) return <div className="callout">{empty}</div>;
  return <>{children(items)}</>;
}

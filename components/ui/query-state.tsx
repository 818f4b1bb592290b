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
export function LoadMore({ query, label }: { query: { hasNextPage: boolean; isFetchingNextPage: boolean; fetchNextPage: () => Promise<unknown> }; label: string }) {
  if (!query.hasNextPage) return null;
  return (
    <footer className="panel-footer">
      <button type="button" className="btn btn-small" onClick={() => void query.fetchNextPage()} disabled={query.isFetchingNextPage}>
        {query.isFetchingNextPage ? 'Loading…' : label}
      </button>
    </footer>
  );
}

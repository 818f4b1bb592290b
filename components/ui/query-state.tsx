import { toApiError } from '@/lib/api-errors';

export function LoadingRows({ label }: { label: string }) {
  return (
    <p className="muted loading" role="status">
      {label}
    </p>
  );
}

export function QueryError({ error, what }: { error: unknown; what: string }) {
  return (
    <div className="callout callout-error" role="alert">
      <strong>Could not load {what}.</strong> {toApiError(error).message}
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

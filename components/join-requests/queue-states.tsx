import type { ReactNode } from 'react';
import { LoadingRows, QueryError } from '@/components/ui/query-state';
import type { QueueFilter } from '@/lib/join-request-queue';

interface QueueStatesProps {
  list: { isPending: boolean; isError: boolean; error: unknown; refetch: () => Promise<unknown> };
  rows: readonly unknown[];
  filter: QueueFilter;
  /** A search or filter narrows the list: the empty queue says that nothing matches. */
  isFiltered: boolean;
  children: ReactNode;
}

/** The queue's empty state, in words for the filter: nothing waiting, nothing matching, or no such requests. */
export function emptyQueueText(filter: QueueFilter, isFiltered: boolean): string {
  if (isFiltered) return 'No request matches the search and filters.';
  if (filter === 'pending') return 'No machine is waiting. New requests appear here as they arrive.';
  return `No ${filter === 'all' ? '' : `${filter} `}requests.`;
}

/** The queue's loading, error (with Retry) and empty states inside its panel, else the queue. */
export function QueueStates({ list, rows, filter, isFiltered, children }: QueueStatesProps) {
  if (list.isPending)
    return (
      <div className="panel-empty">
        <LoadingRows label="Loading join requests…" />
      </div>
    );
  if (list.isError) return <QueryError error={list.error} what="join requests" onRetry={() => void list.refetch()} />;
  if (rows.length === 0) return <p className="panel-empty">{emptyQueueText(filter, isFiltered)}</p>;
  return <>{children}</>;
}

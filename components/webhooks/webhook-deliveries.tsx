'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { QueryStates } from '@/components/ui/query-state';
import { LocalTime } from '@/components/ui/time';
import { toApiError } from '@/lib/api-errors';
import { useTRPC } from '@/lib/trpc';
import { TableScroll } from '@/components/ui/table-scroll';

/** A subscription's deliveries, newest first: status, attempts, the last answer and its latency, the next attempt. */
export function WebhookDeliveries({ tenantId, webhookId }: { tenantId: string; webhookId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const deliveries = useQuery(trpc.webhooks.deliveries.queryOptions({ tenantId, webhookId, limit: 50 }));
  const redeliver = useMutation(
    trpc.webhooks.redeliver.mutationOptions({ onSuccess: () => queryClient.invalidateQueries(trpc.webhooks.deliveries.pathFilter()) }),
  );
  return (
    <section className="panel" aria-label="Deliveries">
      <header className="panel-header">
        <h2>Deliveries</h2>
        <button type="button" className="btn btn-small" onClick={() => void deliveries.refetch()} disabled={deliveries.isFetching}>
          {deliveries.isFetching ? 'Refreshing…' : 'Refresh'}
        </button>
      </header>
      {redeliver.error && (
        <p className="form-error" role="alert">
          {toApiError(redeliver.error).message}
        </p>
      )}
      <QueryStates
        query={deliveries}
        items={deliveries.data?.items ?? []}
        loading="Loading deliveries…"
        what="the deliveries"
        empty="No deliveries yet: send a test event, or wait for one of its events."
      >
        {(items) => (
          <TableScroll label="Delivery log">
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Last answer</th>
                  <th scope="col">Next attempt</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {items.map((d) => (
                  <tr key={d.id}>
                    <th scope="row" className="cell-name">
                      <code>{d.eventType}</code>
                      <span className="cell-sub">
                        <code>{d.id}</code> · <LocalTime iso={d.createdAt} />
                      </span>
                    </th>
                    <td>{d.state === 'delivered' ? 'Delivered' : d.state === 'failed' ? 'Failed' : 'Pending'}</td>
                    <td>{d.attempts}</td>
                    <td>
                      {d.lastStatus !== null ? `HTTP ${d.lastStatus}` : d.lastError ? 'No answer' : '—'}
                      {d.lastLatencyMs !== null && <span className="cell-sub">{d.lastLatencyMs} ms</span>}
                      {d.lastError && <span className="cell-sub">{d.lastError}</span>}
                    </td>
                    <td>{d.nextAttemptAt ? <LocalTime iso={d.nextAttemptAt} /> : <span className="muted">none</span>}</td>
                    <td className="cell-actions">
                      <button
                        type="button"
                        className="btn btn-small"
                        aria-label={`Redeliver ${d.id}`}
                        disabled={redeliver.isPending}
                        onClick={() => redeliver.mutate({ tenantId, webhookId, deliveryId: d.id })}
                      >
                        Redeliver
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableScroll>
        )}
      </QueryStates>
    </section>
  );
}

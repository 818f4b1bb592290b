'use client';

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { actionsColumn, nameColumn } from '@/components/ui/data-columns';
import { DataList } from '@/components/ui/data-table';
import { LocalTime } from '@/components/ui/time';
import { toApiError } from '@/lib/api-errors';
import type { Outputs } from '@/lib/api-types';
import { useTRPC } from '@/lib/trpc';

type Delivery = Outputs['webhooks']['deliveries']['items'][number];

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
      <DataList
        query={deliveries}
        loading="Loading deliveries…"
        what="the deliveries"
        empty="No deliveries yet: send a test event, or wait for one of its events."
        label="Delivery log"
        rowKey={(d) => d.id}
        columns={[
          nameColumn<Delivery>('Event', (d) => (
            <>
              <code>{d.eventType}</code>
              <span className="cell-sub">
                <code>{d.id}</code> · <LocalTime iso={d.createdAt} />
              </span>
            </>
          )),
          {
            id: 'status',
            header: 'Status',
            cell: (d) => (d.state === 'delivered' ? 'Delivered' : d.state === 'failed' ? 'Failed' : 'Pending'),
          },
          { id: 'attempts', header: 'Attempts', cell: (d) => d.attempts },
          {
            id: 'answer',
            header: 'Last answer',
            cell: (d) => (
              <>
                {d.lastStatus !== null ? `HTTP ${d.lastStatus}` : d.lastError ? 'No answer' : '—'}
                {d.lastLatencyMs !== null && <span className="cell-sub">{d.lastLatencyMs} ms</span>}
                {d.lastError && <span className="cell-sub">{d.lastError}</span>}
              </>
            ),
          },
          {
            id: 'next',
            header: 'Next attempt',
            cell: (d) => (d.nextAttemptAt ? <LocalTime iso={d.nextAttemptAt} /> : <span className="muted">none</span>),
          },
          actionsColumn<Delivery>((d) => (
            <button
              type="button"
              className="btn btn-small"
              aria-label={`Redeliver ${d.id}`}
              disabled={redeliver.isPending}
              onClick={() => redeliver.mutate({ tenantId, webhookId, deliveryId: d.id })}
            >
              Redeliver
            </button>
          )),
        ]}
      />
    </section>
  );
}

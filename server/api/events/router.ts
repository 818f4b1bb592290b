import { router, streamProcedure } from '../trpc';
import { domainQuery } from '../domain-procedure';
import { authorize, resource } from '../../authz/authorize';
import { listEvents, listEventsInput } from '../../events/list-events';
import { eventPage } from '../../../protocol/api/event-schemas';
import { watchEvents } from '../../events/listener';
import { guardedStream } from '../live-streams';

const onChangeInput = listEventsInput.pick({ tenantId: true });

export const eventsRouter = router({
  list: domainQuery('compute:events:read', listEventsInput, eventPage, listEvents),
  /**
   * `events.onChange`: the tenant has new events (a join, a refusal, a decision, a renewal…), pushed over
   * server-sent events from PostgreSQL LISTEN/NOTIFY (the `events_notify` trigger). It names no event: the
   * subscriber re-reads its list, through `list` and its own filters and permissions. The caller is decided
   * again while the stream runs (server/api/live-streams.ts).
   */
  onChange: streamProcedure('compute:events:read')
    .input(onChangeInput)
    .subscription(async function* ({ ctx, input, signal }) {
      const changes = guardedStream({
        ctx,
        signal,
        authorize: (principal) => authorize(ctx.db, principal, 'compute:events:read', resource.tenant(input.tenantId)),
        open: (listeners, tenantId, stop) => watchEvents(listeners.eventsListener(), tenantId, stop),
      });
      for await (const change of changes) yield { tenantId: change.tenantId };
    }),
});

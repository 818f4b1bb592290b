import { requirePermission, router } from '../trpc';
import { eventPage, listEvents, listEventsInput } from '../../events/list-events';

export const eventsRouter = router({
  list: requirePermission('compute:events:read')
    .input(listEventsInput)
    .output(eventPage)
    .query(({ ctx, input }) => listEvents(ctx.db, ctx.principal, input)),
});

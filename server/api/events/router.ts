import { z } from 'zod';
import { idOf, pageDirection } from '../../names';
import { requirePermission, router } from '../trpc';
import { listEvents } from '../../events/list-events';

const eventRecord = z.object({
  id: z.string(),
  tenantId: z.string(),
  type: z.string(),
  data: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
});

export const eventsRouter = router({
  list: requirePermission('compute:events:read')
    .input(
      z.strictObject({
        tenantId: idOf('tnt'),
        type: z.string().max(100).optional(),
        limit: z.number().int().min(1).max(200).optional(),
        cursor: z.string().regex(/^\d{1,18}$/, 'not a cursor from this list').optional(),
        direction: pageDirection,
      }),
    )
    .output(z.object({ items: z.array(eventRecord), nextCursor: z.string().nullable() }))
    .query(({ ctx, input }) => listEvents(ctx.db, ctx.principal, input)),
});

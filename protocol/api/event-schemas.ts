import { z } from 'zod';

/** An event as the API answers it (`events.list`). */
const eventRecord = z.object({
  id: z.string(),
  tenantId: z.string(),
  type: z.string(),
  data: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  /**
   * The people behind the operator actors (`operator:op_…`) the data names (`by`, `actor`, `decidedBy`,
   * `createdBy`, …): actor → name, else email. Operators that no longer exist are left out.
   */
  actorNames: z.record(z.string(), z.string()),
});
export type EventRecord = z.infer<typeof eventRecord>;

export const eventPage = z.object({ items: z.array(eventRecord), nextCursor: z.string().nullable() });

import { z } from 'zod';
import { idOf } from '../../protocol/api/resource-names';

const OVERVIEW_RANGES = ['24h', '7d'] as const;
export const overviewInput = z.strictObject({ tenantId: idOf('tnt'), range: z.enum(OVERVIEW_RANGES).default('24h') });

/** One stacked part of a chart: a key (attestor or reason) and its count per hour, aligned with `hours`. */
const series = z.object({ key: z.string(), counts: z.array(z.number().int()) });

export const overview = z.object({
  range: z.enum(OVERVIEW_RANGES),
  /** The start of each hour of the range, oldest first (ISO 8601, UTC). */
  hours: z.array(z.string()),
  joins: z.object({ admitted: z.array(series), pending: z.array(series), refused: z.array(series) }),
  renewals: z.object({ renewed: z.array(z.number().int()), refused: z.array(series) }),
  /** `poolId`: the site's first live bcd pool, whose queue page lists the site's requests (null: none). */
  queue: z.array(
    z.object({
      siteId: z.string(),
      siteName: z.string(),
      poolId: z.string().nullable(),
      pending: z.number().int(),
      oldestPendingSeconds: z.number().nullable(),
    }),
  ),
  /** Decisions of the last 7 days per site: count, median and p90 of created → decided, in seconds. */
  decisions: z.array(
    z.object({
      siteId: z.string(),
      siteName: z.string(),
      poolId: z.string().nullable(),
      decided: z.number().int(),
      medianSeconds: z.number(),
      p90Seconds: z.number(),
    }),
  ),
  expiring: z.array(
    z.object({
      poolId: z.string(),
      poolName: z.string(),
      within1h: z.number().int(),
      within6h: z.number().int(),
      within24h: z.number().int(),
    }),
  ),
  /**
   * Per pool with nodes that are not retired: how many of them hold a live session (their gateway's lease is
   * live, as `nodes.list` and `pools.counts` read it) out of how many.
   */
  connected: z.array(z.object({ poolId: z.string(), poolName: z.string(), connected: z.number().int(), total: z.number().int() })),
});
export type Overview = z.infer<typeof overview>;

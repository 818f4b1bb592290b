import type { z } from 'zod';
import type { Db } from '../db/client';
import { sql } from 'kysely';
import { typed } from '../db/typed';
import { readConnected, readDecisions, readExpiring, readQueue, readRollup } from './overview-sql';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { overviewInput, type Overview } from './schemas';

const HOURS = { '24h': 24, '7d': 168 } as const;
const n = (v: unknown) => Number(v ?? 0);

/** Groups rollup rows of one series into stacked parts aligned with `hours`, the largest part first. */
function stack(rows: Array<{ hour: Date; key: string; count: bigint | number | string }>, hours: Date[]) {
  const index = new Map(hours.map((h, i) => [h.getTime(), i]));
  const byKey = new Map<string, number[]>();
  for (const row of rows) {
    const i = index.get(row.hour.getTime());
    if (i === undefined) continue;
    const counts = byKey.get(row.key) ?? byKey.set(row.key, new Array(hours.length).fill(0)).get(row.key)!;
    counts[i]! += n(row.count);
  }
  const total = (c: number[]) => c.reduce((a, b) => a + b, 0);
  return [...byKey.entries()]
    .map(([key, counts]) => ({ key, counts }))
    .sort((a, b) => total(b.counts) - total(a.counts) || a.key.localeCompare(b.key));
}

/**
 * The console's overview of a tenant (`compute:pools:read` on the tenant): joins and renewals per hour over
 * the range from the `overview_hourly` rollup, the queue and the time to decision per site, and the current
 * certificates expiring and the connected nodes per pool. Every query is bounded by the tenant's sites and pools or by the range's
 * hours, not by the number of events (bench/overview.ts keeps it within 300 ms p99 at 100,000 nodes).
 */
export async function getOverview(db: Db, principal: Principal, input: z.infer<typeof overviewInput>): Promise<Overview> {
  await authorize(db, principal, 'compute:pools:read', resource.tenant(input.tenantId));
  const span = HOURS[input.range];
  const { now } = await typed(db)
    .selectNoFrom(sql<Date>`date_trunc('hour', compute_now())`.as('now'))
    .executeTakeFirstOrThrow();
  const hours = Array.from({ length: span }, (_, i) => new Date(now.getTime() - (span - 1 - i) * 3_600_000));
  const [rollup, queue, decisions, expiring, connected] = await Promise.all([
    readRollup(db, input.tenantId, hours[0]!),
    readQueue(db, input.tenantId),
    readDecisions(db, input.tenantId),
    readExpiring(db, input.tenantId),
    readConnected(db, input.tenantId),
  ]);
  const of = (series: string) => rollup.filter((r) => r.series === series);
  const flat = (series: string) =>
    stack(
      of(series).map((r) => ({ ...r, key: '' })),
      hours,
    )[0]?.counts ?? new Array(span).fill(0);
  return {
    range: input.range,
    hours: hours.map((h) => h.toISOString()),
    joins: { admitted: stack(of('admitted'), hours), pending: stack(of('pending'), hours), refused: stack(of('refused'), hours) },
    renewals: { renewed: flat('renewed'), refused: stack(of('renew-refused'), hours) },
    queue: queue.map((q) => ({
      siteId: q.site_id,
      siteName: q.name,
      poolId: q.pool_id,
      pending: q.pending,
      oldestPendingSeconds: q.oldest === null ? null : Math.round(q.oldest),
    })),
    decisions: decisions.map((d) => ({
      siteId: d.site_id,
      siteName: d.name,
      poolId: d.pool_id,
      decided: d.decided,
      medianSeconds: Math.round(d.p50),
      p90Seconds: Math.round(d.p90),
    })),
    expiring: expiring.map((e) => ({ poolId: e.pool_id, poolName: e.name, within1h: e.h1, within6h: e.h6, within24h: e.h24 })),
    connected: connected.map((c) => ({ poolId: c.pool_id, poolName: c.name, connected: c.connected, total: c.total })),
  };
}

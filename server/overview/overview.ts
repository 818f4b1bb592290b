import type { z } from 'zod';
import type { Db } from '../db/client';
import { Prisma } from '../db/generated/client';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { overviewInput, type Overview } from './schemas';

const HOURS = { '24h': 24, '7d': 168 } as const;
/** The pool whose queue page shows a site's requests: the first live bcd pool by name, as that page picks. */
const QUEUE_POOL = Prisma.sql`(SELECT p.id FROM pools p WHERE p.site_id = s.id AND p.agent = 'bcd' AND p.archived_at IS NULL ORDER BY p.name LIMIT 1)`;
const n = (v: unknown) => Number(v ?? 0);

/** Groups rollup rows of one series into stacked parts aligned with `hours`, the largest part first. */
function stack(rows: Array<{ hour: Date; key: string; count: bigint | number }>, hours: Date[]) {
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
  // A SELECT without FROM answers exactly one row.
  const { now } = (await db.$queryRaw<{ now: Date }[]>`SELECT date_trunc('hour', compute_now()) AS now`)[0]!;
  const hours = Array.from({ length: span }, (_, i) => new Date(now.getTime() - (span - 1 - i) * 3_600_000));
  const [rollup, queue, decisions, expiring, connected] = await Promise.all([
    db.$queryRaw<{ hour: Date; series: string; key: string; count: bigint }[]>`
      SELECT hour, series, key, count FROM overview_hourly
       WHERE tenant_id = ${input.tenantId} AND hour >= ${hours[0]!}`,
    db.$queryRaw<{ site_id: string; name: string; pool_id: string | null; pending: number; oldest: number | null }[]>`
      SELECT s.id AS site_id, s.name, ${QUEUE_POOL} AS pool_id, count(r.id)::int AS pending,
             extract(epoch FROM compute_now() - min(r.created_at))::float8 AS oldest
        FROM sites s
        LEFT JOIN join_requests r ON r.site_id = s.id AND r.tenant_id = ${input.tenantId} AND r.state = 'pending' AND r.expires_at > compute_now()
       WHERE s.owner_tenant_id = ${input.tenantId} AND s.archived_at IS NULL
       GROUP BY s.id, s.name ORDER BY s.name`,
    db.$queryRaw<{ site_id: string; name: string; pool_id: string | null; decided: number; p50: number; p90: number }[]>`
      SELECT r.site_id, s.name, ${QUEUE_POOL} AS pool_id, count(*)::int AS decided,
             percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM r.decided_at - r.created_at))::float8 AS p50,
             percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM r.decided_at - r.created_at))::float8 AS p90
        FROM join_requests r JOIN sites s ON s.id = r.site_id
       WHERE r.tenant_id = ${input.tenantId} AND r.decided_at IS NOT NULL AND r.decided_at > compute_now() - interval '7 days'
       GROUP BY r.site_id, s.id, s.name ORDER BY s.name`,
    // nodes.cert_not_after: the end of each node's current certificate (kept by triggers).
    db.$queryRaw<{ pool_id: string; name: string; h1: number; h6: number; h24: number }[]>`
      SELECT p.id AS pool_id, p.name,
             count(*) FILTER (WHERE n.cert_not_after <= compute_now() + interval '1 hour')::int AS h1,
             count(*) FILTER (WHERE n.cert_not_after <= compute_now() + interval '6 hours')::int AS h6,
             count(*) FILTER (WHERE n.cert_not_after <= compute_now() + interval '24 hours')::int AS h24
        FROM nodes n JOIN pools p ON p.id = n.pool_id
       WHERE n.tenant_id = ${input.tenantId} AND n.state <> 'retired' AND n.cert_not_after > compute_now()
       GROUP BY p.id, p.name ORDER BY p.name`,
    // Sessions count only under a live gateway lease: a dead gateway's rows stop counting when it runs out.
    db.$queryRaw<{ pool_id: string; name: string; connected: number; total: number }[]>`
      SELECT p.id AS pool_id, p.name, count(*)::int AS total,
             count(*) FILTER (WHERE EXISTS (
               SELECT 1 FROM node_sessions s JOIN gateway_leases g ON g.gateway_id = s.gateway_id
                WHERE s.node_id = n.id AND g.expires_at > compute_now()))::int AS connected
        FROM nodes n JOIN pools p ON p.id = n.pool_id
       WHERE n.tenant_id = ${input.tenantId} AND n.state <> 'retired'
       GROUP BY p.id, p.name ORDER BY p.name`,
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

import { sql, type ExpressionBuilder, type RawBuilder } from 'kysely';
import type { Tx } from '../db/client';
import type { DB } from '../db/generated/kysely/types';
import { typed } from '../db/typed';

// The overview's reads (server/overview/overview.ts). Each is bounded by the tenant's sites and pools or by the
// range's hours, not by the number of events (bench/overview.ts).

const computeNow = sql<Date>`compute_now()`;

/** The pool whose queue page shows a site's requests (site `s`): the first live bcd pool by name, as that page picks. */
const queuePool = (eb: ExpressionBuilder<DB & { s: DB['sites'] }, 's'>) =>
  eb
    .selectFrom('pools as p')
    .select('p.id')
    .whereRef('p.site_id', '=', 's.id')
    .where('p.agent', '=', 'bcd')
    .where('p.archived_at', 'is', null)
    .orderBy('p.name')
    .limit(1)
    .as('pool_id');

/** The `overview_hourly` rollup rows of the tenant from `since` (`count` is int8: a bigint at run time). */
export const readRollup = (tx: Tx, tenantId: string, since: Date) =>
  typed(tx)
    .selectFrom('overview_hourly')
    .select(['hour', 'series', 'key', 'count'])
    .where('tenant_id', '=', tenantId)
    .where('hour', '>=', since)
    .execute();

/** Per live site of the tenant: its pending requests and the age of the oldest, in seconds. */
export const readQueue = (tx: Tx, tenantId: string) =>
  typed(tx)
    .selectFrom('sites as s')
    .leftJoin('join_requests as r', (join) =>
      join
        .onRef('r.site_id', '=', 's.id')
        .on('r.tenant_id', '=', tenantId)
        .on('r.state', '=', 'pending')
        .on('r.expires_at', '>', computeNow),
    )
    .select((eb) => [
      's.id as site_id',
      's.name',
      queuePool(eb),
      eb.cast<number>(eb.fn.count('r.id'), 'integer').as('pending'),
      sql<number | null>`extract(epoch FROM compute_now() - ${eb.fn.min('r.created_at')})::float8`.as('oldest'),
    ])
    .where('s.owner_tenant_id', '=', tenantId)
    .where('s.archived_at', 'is', null)
    .groupBy(['s.id', 's.name'])
    .orderBy('s.name')
    .execute();

/** Per site: the requests decided in the last 7 days and the median and 90th percentile of their wait, in seconds. */
export const readDecisions = (tx: Tx, tenantId: string) =>
  typed(tx)
    .selectFrom('join_requests as r')
    .innerJoin('sites as s', 's.id', 'r.site_id')
    .select((eb) => {
      const wait = sql`extract(epoch FROM ${eb.ref('r.decided_at')} - ${eb.ref('r.created_at')})`;
      return [
        'r.site_id',
        's.name',
        queuePool(eb),
        eb.cast<number>(eb.fn.countAll(), 'integer').as('decided'),
        sql<number>`percentile_cont(0.5) WITHIN GROUP (ORDER BY ${wait})::float8`.as('p50'),
        sql<number>`percentile_cont(0.9) WITHIN GROUP (ORDER BY ${wait})::float8`.as('p90'),
      ];
    })
    .where('r.tenant_id', '=', tenantId)
    .where('r.decided_at', 'is not', null)
    .where('r.decided_at', '>', sql<Date>`compute_now() - interval '7 days'`)
    .groupBy(['r.site_id', 's.id', 's.name'])
    .orderBy('s.name')
    .execute();

/** Per pool: live nodes whose current certificate (nodes.cert_not_after, kept by triggers) ends within 1, 6, 24 hours. */
export const readExpiring = (tx: Tx, tenantId: string) =>
  typed(tx)
    .selectFrom('nodes as n')
    .innerJoin('pools as p', 'p.id', 'n.pool_id')
    .select((eb) => {
      const within = (end: RawBuilder<Date>) => eb.cast<number>(eb.fn.countAll().filterWhere('n.cert_not_after', '<=', end), 'integer');
      return [
        'p.id as pool_id',
        'p.name',
        within(sql`compute_now() + interval '1 hour'`).as('h1'),
        within(sql`compute_now() + interval '6 hours'`).as('h6'),
        within(sql`compute_now() + interval '24 hours'`).as('h24'),
      ];
    })
    .where('n.tenant_id', '=', tenantId)
    .where('n.state', '<>', 'retired')
    .where('n.cert_not_after', '>', computeNow)
    .groupBy(['p.id', 'p.name'])
    .orderBy('p.name')
    .execute();

/** Per pool: its nodes, and those with a session under a live gateway lease (a dead gateway's rows stop counting). */
export const readConnected = (tx: Tx, tenantId: string) =>
  typed(tx)
    .selectFrom('nodes as n')
    .innerJoin('pools as p', 'p.id', 'n.pool_id')
    .select((eb) => [
      'p.id as pool_id',
      'p.name',
      eb.cast<number>(eb.fn.countAll(), 'integer').as('total'),
      eb
        .cast<number>(
          eb.fn
            .countAll()
            .filterWhere((f) =>
              f.exists(
                f
                  .selectFrom('node_sessions as s')
                  .innerJoin('gateway_leases as g', 'g.gateway_id', 's.gateway_id')
                  .select(f.lit(1).as('one'))
                  .whereRef('s.node_id', '=', 'n.id')
                  .where('g.expires_at', '>', computeNow),
              ),
            ),
          'integer',
        )
        .as('connected'),
    ])
    .where('n.tenant_id', '=', tenantId)
    .where('n.state', '<>', 'retired')
    .groupBy(['p.id', 'p.name'])
    .orderBy('p.name')
    .execute();

import { sql } from 'kysely';
import type { Tx } from '../db/client';
import { typed } from '../db/typed';
import type { Wanted } from './issue';

/**
 * Inserts the row unless the idempotency key is taken (`ON CONFLICT DO NOTHING`, so concurrent calls with one key
 * mint one token without aborting the caller's transaction); true when it inserted. `discovery` is a `discovery`
 * token's boot facts, stored as JSON.
 */
export async function insertToken(tx: Tx, id: string, secretHash: Buffer, t: Wanted, discovery: object | null): Promise<boolean> {
  try {
    const db = typed(tx);
    // Milliseconds, as answers show times: an expiry read from an answer is the instant it ends.
    const nowMs = db.selectNoFrom(sql<Date>`date_trunc('milliseconds', compute_now())`.as('at')).as('now_ms');
    const rows = await db
      .insertInto('join_tokens')
      .columns([
        'id',
        'tenant_id',
        'pool_id',
        'site_id',
        'role',
        'secret_hash',
        'max_uses',
        'uses_left',
        'expect',
        'allow_reclaim',
        'hosted',
        'bound_mac',
        'discovery',
        'expires_at',
        'created_by',
        'idempotency_key',
        'created_at',
        'name',
        'description',
        'labels',
        'node_id',
      ])
      .expression(
        db
          .selectFrom(nowMs)
          .select((eb) => [
            eb.val(id).as('id'),
            eb.val(t.tenantId).as('tenant_id'),
            eb.val(t.poolId).as('pool_id'),
            eb.val(t.siteId).as('site_id'),
            eb.val(t.role).as('role'),
            eb.val(secretHash).as('secret_hash'),
            eb.val(t.maxUses).as('max_uses'),
            eb.val(t.maxUses).as('uses_left'),
            sql`${t.expect === null ? null : JSON.stringify(t.expect)}::jsonb`.as('expect'),
            eb.val(t.allowReclaim).as('allow_reclaim'),
            eb.val(t.hosted).as('hosted'),
            eb.val(t.boundMac).as('bound_mac'),
            sql`${discovery === null ? null : JSON.stringify(discovery)}::jsonb`.as('discovery'),
            sql<Date>`${eb.ref('now_ms.at')} + ${t.ttlSeconds}::int * interval '1 second'`.as('expires_at'),
            eb.val(t.createdBy).as('created_by'),
            eb.val(t.idempotencyKey).as('idempotency_key'),
            eb.ref('now_ms.at').as('created_at'),
            eb.val(t.name ?? null).as('name'),
            eb.val(t.description ?? null).as('description'),
            sql`${JSON.stringify(t.labels)}::jsonb`.as('labels'),
            eb.val(t.nodeId).as('node_id'),
          ]),
      )
      .onConflict((oc) => oc.columns(['tenant_id', 'created_by', 'idempotency_key']).doNothing())
      .returning('id')
      .execute();
    return rows.length === 1;
  } catch (error) {
    // PostgreSQL's detail for a failed row ("Failing row contains (…)") would print the secret's hash;
    // only the SQLSTATE travels on, never the driver error itself.
    // eslint-disable-next-line preserve-caught-error -- the driver error must not travel (see above)
    throw new Error(`Storing join token ${id} failed (SQLSTATE ${sqlState(error) ?? 'unknown'})`);
  }
}

function sqlState(error: unknown): string | undefined {
  const meta = (error as { meta?: { driverAdapterError?: { cause?: { originalCode?: string } } } })?.meta;
  return meta?.driverAdapterError?.cause?.originalCode ?? (error as { code?: string })?.code;
}

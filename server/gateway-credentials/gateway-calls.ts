import type pg from 'pg';
import { sql } from 'kysely';
import type { Tx } from '../db/client';
import { typed } from '../db/typed';

// Every answered credentials call of a gateway is one upsert of its vouching leaf's row in
// `gateway_credential_calls`: the serving CA the leaf chains to, its names, when it was last seen, and the leaf
// the API issued to replace it. Retiring the serving CA reads it (a gateway still on the old CA's leaf would be
// stranded); rows not seen for a day are swept.
//
// The upsert and the sweep stay plain SQL on the server's pg pool (docs/decisions/typed-sql.md): the upsert runs
// on every credentials call of every gateway (a machine-facing path, one indexed statement, no transaction),
// and the sweep, like the rate-limit sweep, deletes in SKIP LOCKED batches from each instance's sweeper on that
// pool. test/sql-check.test.ts PREPAREs both against the migrated schema.

/** A gateway seen within this many seconds counts as up (it calls every 3 s). */
export const GATEWAY_SEEN_WINDOW_SECONDS = 60;
/** Rows not seen for this long are swept. */
const GATEWAY_CALL_RETENTION = '1 day';
const GATEWAY_CALL_SWEEP_BATCH = 1_000;
/** At most this many names are kept per leaf (ours carry a few). */
const MAX_NAMES = 16;

/** One answered call: the vouching leaf (SHA-256 of its DER), its serving CA's pin and names, and its successor. */
export interface GatewayCall {
  leafSha256: string;
  servingCaPin: string;
  names: string[];
  /** SHA-256 of the leaf this answer issued for the gateway's next key, or null when it issued none. */
  successorSha256: string | null;
}

const UPSERT_CALL = `
INSERT INTO gateway_credential_calls (leaf_sha256, serving_ca_pin, names, first_seen, last_seen, successor_sha256)
VALUES ($1, $2, $3::text[], compute_now(), compute_now(), $4)
ON CONFLICT (leaf_sha256) DO UPDATE
  SET last_seen = compute_now(),
      successor_sha256 = COALESCE(EXCLUDED.successor_sha256, gateway_credential_calls.successor_sha256)`;

/** Records one answered call (one indexed upsert). */
export async function recordGatewayCall(pool: pg.Pool, call: GatewayCall): Promise<void> {
  const names = call.names.slice(0, MAX_NAMES).map((name) => name.slice(0, 253));
  await pool.query(UPSERT_CALL, [call.leafSha256, call.servingCaPin, names, call.successorSha256]);
}

/** Gateways still on a serving CA: how many leaves, each one's first name, and when the latest of them called. */
interface GatewaysOnCa {
  count: number;
  names: string[];
  lastSeen: Date | null;
}

/**
 * Leaves of the serving CA `pin` seen within the last minute whose successor (the leaf the API issued to replace
 * each) has not called since: the gateways that retiring that CA would strand.
 */
export async function gatewaysOnServingCa(tx: Tx, pin: string): Promise<GatewaysOnCa> {
  const row = await typed(tx)
    .selectFrom('gateway_credential_calls as c')
    .select((eb) => {
      const firstName = sql<string>`${eb.ref('c.names')}[1]`;
      return [
        eb.cast<number>(eb.fn.countAll(), 'integer').as('n'),
        eb.fn.agg<string[] | null>('array_agg', [firstName]).distinct().filterWhere(firstName, 'is not', null).as('names'),
        eb.fn.max('c.last_seen').as('last_seen'),
      ];
    })
    .where('c.serving_ca_pin', '=', pin)
    .where('c.last_seen', '>', sql<Date>`compute_now() - make_interval(secs => ${GATEWAY_SEEN_WINDOW_SECONDS})`)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('gateway_credential_calls as s')
            .select(sql.lit(1).as('one'))
            .whereRef('s.leaf_sha256', '=', 'c.successor_sha256')
            .whereRef('s.serving_ca_pin', '<>', 'c.serving_ca_pin')
            .whereRef('s.last_seen', '>=', 'c.last_seen'),
        ),
      ),
    )
    .executeTakeFirstOrThrow();
  return { count: row.n, names: row.names ?? [], lastSeen: row.last_seen };
}

const SWEEP_CALLS = `
DELETE FROM gateway_credential_calls WHERE ctid IN (
  SELECT ctid FROM gateway_credential_calls WHERE last_seen < compute_now() - $1::interval LIMIT $2 FOR UPDATE SKIP LOCKED)`;

/** Deletes rows not seen for `olderThan` (a day), in batches; the number deleted. */
export async function sweepGatewayCalls(pool: pg.Pool, options: { olderThan?: string; batch?: number } = {}): Promise<number> {
  const batch = options.batch ?? GATEWAY_CALL_SWEEP_BATCH;
  let deleted = 0;
  for (;;) {
    const result = await pool.query(SWEEP_CALLS, [options.olderThan ?? GATEWAY_CALL_RETENTION, batch]);
    deleted += result.rowCount ?? 0;
    if ((result.rowCount ?? 0) < batch) return deleted;
  }
}

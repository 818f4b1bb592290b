import { sql } from 'kysely';
import type { Tx } from '../../db/client';
import { typed } from '../../db/typed';

// A rotation step's reads and writes beyond Prisma's model calls. None is on a measured path: a step is an
// operator's action, run a handful of times per rotation.

/** The channel every instance's PKI source LISTENs on; a rotation step NOTIFYs it with the new trust version. */
export const PKI_CHANGED_CHANNEL = 'pki_changed';

/** The database's clock (`compute_now()`), which stamps every step. */
export async function databaseNow(tx: Tx): Promise<Date> {
  return (
    await typed(tx)
      .selectNoFrom(sql<Date>`compute_now()`.as('now'))
      .executeTakeFirstOrThrow()
  ).now;
}

/**
 * Valid, unrevoked certificates that the node CA with `pin` issued, counting those issued before `ca_pin`
 * existed (null) as its own: retiring a node CA is refused while any remains.
 */
export async function liveCertificatesOf(tx: Tx, pin: string): Promise<number> {
  const row = await typed(tx)
    .selectFrom('node_certs')
    .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
    .where('revoked_at', 'is', null)
    .where('not_after', '>', sql<Date>`compute_now()`)
    .where((eb) => eb.or([eb('ca_pin', 'is', null), eb('ca_pin', '=', pin)]))
    .executeTakeFirstOrThrow();
  return row.n;
}

/**
 * A forced retirement of the node CA with `pin`: revokes its valid certificates (as liveCertificatesOf counts
 * them), reason `node-ca-retired`, one `security.certificate-revoked` event each, in the step's transaction. From
 * its commit every instance refuses them (sessions, leases, renewals, x509pop re-joins all read `revoked_at`),
 * whatever a gateway still trusts until its next credentials call. Returns how many.
 */
export async function revokeCertificatesOf(tx: Tx, pin: string): Promise<number> {
  const row = await typed(tx)
    .with('revoked', (db) =>
      db
        .updateTable('node_certs as c')
        .from('nodes as n')
        .set({ revoked_at: sql<Date>`compute_now()`, revocation_reason: 'node-ca-retired' })
        .whereRef('n.id', '=', 'c.node_id')
        .where('c.revoked_at', 'is', null)
        .where('c.not_after', '>', sql<Date>`compute_now()`)
        .where((eb) => eb.or([eb('c.ca_pin', 'is', null), eb('c.ca_pin', '=', pin)]))
        .returning(['c.serial', 'c.node_id', 'n.tenant_id']),
    )
    .with('published', (db) =>
      db
        .insertInto('events')
        .columns(['tenant_id', 'type', 'data'])
        .expression((eb) =>
          eb
            .selectFrom('revoked')
            .select((r) => [
              'tenant_id',
              sql.lit('security.certificate-revoked').as('type'),
              r
                .fn('jsonb_build_object', [
                  sql.lit('nodeId'),
                  'node_id',
                  sql.lit('serial'),
                  'serial',
                  sql.lit('reason'),
                  sql.lit('node-ca-retired'),
                ])
                .as('data'),
            ]),
        )
        .returning(sql.lit(1).as('one')),
    )
    .selectFrom('published')
    .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
    .executeTakeFirstOrThrow();
  return row.n;
}

/** Nodes that are not retired, and how many of them reported holding at least trust version `version`. */
export async function nodesHolding(tx: Tx, version: number): Promise<{ nodesReady: number; nodesTotal: number }> {
  const row = await typed(tx)
    .selectFrom('nodes')
    .select((eb) => [
      eb.cast<number>(eb.fn.countAll().filterWhere('trust_version', '>=', sql<number>`${version}::int`), 'integer').as('ready'),
      eb.cast<number>(eb.fn.countAll(), 'integer').as('total'),
    ])
    .where('state', '<>', 'retired')
    .executeTakeFirstOrThrow();
  return { nodesReady: row.ready, nodesTotal: row.total };
}

/** Announces trust version `version` to every instance; delivered when the step's transaction commits. */
export async function notifyPkiChanged(tx: Tx, version: number): Promise<void> {
  // As text: pg_notify answers void, which Prisma's raw reads cannot decode.
  await typed(tx)
    .selectNoFrom((eb) => eb.cast(eb.fn('pg_notify', [eb.val(PKI_CHANGED_CHANNEL), eb.val(String(version))]), 'text').as('notified'))
    .execute();
}

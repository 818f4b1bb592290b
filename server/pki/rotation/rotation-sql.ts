import type { Tx } from '../../db/client';

/** The channel every instance's PKI source LISTENs on; a rotation step NOTIFYs it with the new trust version. */
export const PKI_CHANGED_CHANNEL = 'pki_changed';

/** The database's clock (`compute_now()`), which stamps every step. */
export async function databaseNow(tx: Tx): Promise<Date> {
  return (await tx.$queryRaw<{ now: Date }[]>`SELECT compute_now() AS now`)[0]!.now;
}

/**
 * Valid, unrevoked certificates that the node CA with `pin` issued, counting those issued before `ca_pin`
 * existed (null) as its own: retiring a node CA is refused while any remains.
 */
export async function liveCertificatesOf(tx: Tx, pin: string): Promise<number> {
  const rows = await tx.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM node_certs
     WHERE revoked_at IS NULL AND not_after > compute_now() AND (ca_pin IS NULL OR ca_pin = ${pin})`;
  return rows[0]!.n;
}

/**
 * A forced retirement of the node CA with `pin`: revokes its valid certificates (as liveCertificatesOf counts
 * them), reason `node-ca-retired`, one `security.certificate-revoked` event each, in the step's transaction. From
 * its commit every instance refuses them (sessions, leases, renewals, x509pop re-joins all read `revoked_at`),
 * whatever a gateway still trusts until its next credentials call. Returns how many.
 */
export async function revokeCertificatesOf(tx: Tx, pin: string): Promise<number> {
  const rows = await tx.$queryRaw<{ n: number }[]>`
    WITH revoked AS (
      UPDATE node_certs c SET revoked_at = compute_now(), revocation_reason = 'node-ca-retired'
        FROM nodes n
       WHERE n.id = c.node_id AND c.revoked_at IS NULL AND c.not_after > compute_now()
         AND (c.ca_pin IS NULL OR c.ca_pin = ${pin})
      RETURNING c.serial, c.node_id, n.tenant_id),
    published AS (
      INSERT INTO events (tenant_id, type, data)
      SELECT tenant_id, 'security.certificate-revoked',
             jsonb_build_object('nodeId', node_id, 'serial', serial, 'reason', 'node-ca-retired')
        FROM revoked
      RETURNING 1)
    SELECT count(*)::int AS n FROM published`;
  return rows[0]!.n;
}

/** Nodes that are not retired, and how many of them reported holding at least trust version `version`. */
export async function nodesHolding(tx: Tx, version: number): Promise<{ nodesReady: number; nodesTotal: number }> {
  const rows = await tx.$queryRaw<{ ready: number; total: number }[]>`
    SELECT count(*) FILTER (WHERE trust_version >= ${version}::int)::int AS ready, count(*)::int AS total
      FROM nodes WHERE state <> 'retired'`;
  return { nodesReady: rows[0]!.ready, nodesTotal: rows[0]!.total };
}

/** Announces trust version `version` to every instance; delivered when the step's transaction commits. */
export async function notifyPkiChanged(tx: Tx, version: number): Promise<void> {
  await tx.$executeRaw`SELECT pg_notify(${PKI_CHANGED_CHANNEL}, ${String(version)})`;
}

import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../server/db/client';
import { newId } from '../server/ids';

// Test-only helpers of the stale-node tests (imported by *.test.ts files only): nodes in a given state of
// connection, written directly, with a certificate, a trusted hardware key, MACs and a TPM EK binding, so the
// retire step's effects can be checked.

export const DAY = 86_400_000;
export const at = (base: Date, days: number, ms = 0) => new Date(base.getTime() + days * DAY + ms);

interface StaleTestNode {
  id: string;
  serial: string;
}

/**
 * A node of `poolId` whose last session ended at `endedAt` (null: it never had one); `liveSession` gives it a
 * session row on a live gateway too (a node with two sessions, one of them ended).
 */
export async function insertNode(
  db: Db,
  t: { tenantId: string; siteId: string },
  poolId: string,
  endedAt: Date | null,
  options: { liveSession?: boolean; hostname?: string } = {},
): Promise<StaleTestNode> {
  const id = newId('node');
  const serial = randomBytes(8).toString('hex');
  await db.node.create({
    data: {
      id,
      tenantId: t.tenantId,
      siteId: t.siteId,
      poolId,
      role: 'node',
      state: 'adopted',
      trust: 'software',
      attestor: 'join-token',
      hardwareKey: randomBytes(32),
      hardwareKeyTrusted: true,
      claims: { hostname: options.hostname ?? `host-${id.slice(-6)}`, macs: ['52:54:00:12:34:56'] },
      sessionEndedAt: endedAt,
    },
  });
  await db.$executeRaw`INSERT INTO node_certs (serial, node_id, identity_generation, role, spki_sha256, der, not_before, not_after)
    VALUES (${serial}, ${id}, 1, 'node', sha256(${id}::bytea), '\\x00', now(), now() + interval '3650 days')`;
  await db.tpmEkBinding.create({ data: { ekSha256: createHash('sha256').update(id).digest('hex'), nodeId: id } });
  if (options.liveSession) await openSession(db, id);
  return { id, serial };
}

/** A session row for the node on a live gateway of its own, as a Hello leaves it (session_ended_at cleared). */
async function openSession(db: Db, nodeId: string) {
  const gateway = `gw-stale-${nodeId.slice(-10)}`;
  await db.$executeRaw`INSERT INTO gateway_leases (gateway_id, started_at, heartbeat_at, expires_at)
    VALUES (${gateway}, now(), now(), now() + interval '3650 days') ON CONFLICT DO NOTHING`;
  await db.$executeRaw`INSERT INTO node_sessions (id, node_id, cert_serial, gateway_id, agent_version, opened_at)
    VALUES (${newId('sess')}, ${nodeId}, 'serial', ${gateway}, '0.1.0-test', now())`;
}

/** Ends the node's sessions at `endedAt`, as the gateway's report or the sweep does. */
export async function endSessions(db: Db, nodeId: string, endedAt: Date) {
  await db.$executeRaw`DELETE FROM node_sessions WHERE node_id = ${nodeId}`;
  await db.node.update({ where: { id: nodeId }, data: { sessionEndedAt: endedAt } });
}

/** The node connects again: a session row, and its last session's end cleared (as a Hello does). */
export async function reconnect(db: Db, nodeId: string) {
  await openSession(db, nodeId);
  await db.node.update({ where: { id: nodeId }, data: { sessionEndedAt: null } });
}

import { Prisma } from '../db/generated/client';
import type { Db } from '../db/client';
import type { NodeFilter } from '../../protocol/api/node-filter';
import { nodeCondition } from './node-filter';

/** One node as its CSV row reads it. */
export interface NodeExportRow {
  id: string;
  claims: Record<string, unknown>;
  labels: Record<string, string>;
  state: string;
  cordoned: boolean;
  pool_id: string | null;
  pool_name: string | null;
  site_id: string;
  site_name: string | null;
  role: string;
  attestor: string;
  trust: string;
  has_hardware_key: boolean;
  hardware_key_trusted: boolean;
  trust_version: number | null;
  cert_not_after: Date | null;
  connected: boolean;
  created_at: Date;
}

/**
 * One batch of the nodes `filter` selects, in id order after `after`, with their pool's and site's names and
 * whether a session is live (by the database's clock): a keyset page, so an export holds one batch at a time.
 */
export function nodeExportBatch(db: Db, tenantId: string, filter: NodeFilter, after: string | null, limit: number) {
  return db.$queryRaw<NodeExportRow[]>`
    SELECT n.id, n.claims, n.labels, n.state, n.cordoned, n.pool_id, p.name AS pool_name, n.site_id, s.name AS site_name,
           n.role, n.attestor, n.trust, n.hardware_key IS NOT NULL AS has_hardware_key, n.hardware_key_trusted,
           n.trust_version, n.cert_not_after, n.created_at,
           EXISTS (SELECT 1 FROM node_sessions ns JOIN gateway_leases g ON g.gateway_id = ns.gateway_id
                    WHERE ns.node_id = n.id AND g.expires_at > compute_now()) AS connected
      FROM nodes n
      LEFT JOIN pools p ON p.id = n.pool_id
      LEFT JOIN sites s ON s.id = n.site_id
     WHERE ${nodeCondition(tenantId, filter)} ${after === null ? Prisma.empty : Prisma.sql`AND n.id > ${after}`}
     ORDER BY n.id
     LIMIT ${limit}::int`;
}

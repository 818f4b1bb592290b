import type { PoolColumns } from '../../../requests/request-store-sql';
import type { LockedPool, NodeTrust } from '../../decide';
import { lockedPool } from '../../locked-rows';

/** A presented leaf's node_certs row, its node and the node's pool, as the x509pop attestor decides on them. */
export interface LeafRow {
  serial: string;
  der: Buffer;
  certGeneration: number;
  certRole: string;
  isRevoked: boolean;
  notAfter: Date;
  nodeId: string;
  tenantId: string;
  siteId: string;
  poolId: string | null;
  role: string;
  state: string;
  trust: NodeTrust;
  hardwareKeyTrusted: boolean;
  nodeGeneration: number;
  /** The node's labels: a rejoin keeps them (the admission's event names them). */
  labels: Record<string, string>;
  pool: LockedPool | null;
}

/** A row of SELECT_X509POP_LEAVES, as pg returns it. */
export interface LeafSqlRow extends PoolColumns {
  spki_sha256: string;
  serial: string;
  der: Buffer;
  cert_generation: number;
  cert_role: string;
  is_revoked: boolean;
  not_after: Date;
  node_id: string;
  tenant_id: string;
  site_id: string;
  role: string;
  state: string;
  trust: NodeTrust;
  hardware_key_trusted: boolean;
  node_generation: number;
  labels: Record<string, string> | null;
  p_id: string | null;
}

/** A row of SELECT_X509POP_LEAVES as the attestor reads it. */
export function toLeafRow(r: LeafSqlRow): LeafRow {
  return {
    serial: r.serial,
    der: r.der,
    certGeneration: r.cert_generation,
    certRole: r.cert_role,
    isRevoked: r.is_revoked,
    notAfter: r.not_after,
    nodeId: r.node_id,
    tenantId: r.tenant_id,
    siteId: r.site_id,
    poolId: r.pool_id,
    role: r.role,
    state: r.state,
    trust: r.trust,
    hardwareKeyTrusted: r.hardware_key_trusted,
    nodeGeneration: r.node_generation,
    labels: r.labels ?? {},
    pool: r.p_id ? lockedPool(r) : null,
  };
}

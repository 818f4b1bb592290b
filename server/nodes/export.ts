import type { z } from 'zod';
import type { Db } from '../db/client';
import type { Principal } from '../authz/principal';
import type { exportNodesInput } from '../../protocol/api/node-schemas';
import { CSV_LINE_BREAK, csvRow } from '../../lib/csv';
import { nodeExportBatch, type NodeExportRow } from './export-sql';
import { authorizeNodeFilter } from './nodes';

/** At most this many nodes per export: the fleet view's scale; a larger fleet is exported a pool at a time. */
export const NODE_EXPORT_MAX_ROWS = 200_000;
/** Nodes read per query: the export holds one batch in memory, whatever the number of rows. */
const NODE_EXPORT_BATCH = 1_000;

const NODE_CSV_HEADER = [
  'id',
  'hostname',
  'state',
  'cordoned',
  'connected',
  'pool_id',
  'pool',
  'site_id',
  'site',
  'role',
  'attestor',
  'trust',
  'node_key',
  'trust_version',
  'certificate_not_after',
  'labels',
  'product_serial',
  'board_serial',
  'chassis_serial',
  'product_uuid',
  'macs',
  'vendor',
  'model',
  'joined_at',
] as const;

const text = (value: unknown) => (typeof value === 'string' ? value : null);
const list = (value: unknown) => (Array.isArray(value) ? value.filter((v) => typeof v === 'string').join(' ') : null);

function nodeCsvRow(n: NodeExportRow): string {
  const claims = (n.claims ?? {}) as Record<string, unknown>;
  const nodeKey = !n.has_hardware_key ? 'none' : n.hardware_key_trusted ? 'trusted' : 'unattested';
  const labels = Object.entries((n.labels ?? {}) as Record<string, string>)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
  return csvRow([
    n.id,
    text(claims.hostname),
    n.state,
    String(n.cordoned),
    String(n.connected),
    n.pool_id,
    n.pool_name,
    n.site_id,
    n.site_name,
    n.role,
    n.attestor,
    n.trust,
    nodeKey,
    n.trust_version,
    n.cert_not_after?.toISOString() ?? null,
    labels,
    text(claims.productSerial),
    text(claims.boardSerial),
    text(claims.chassisSerial),
    text(claims.productUuid),
    list(claims.macs),
    text(claims.sysVendor),
    text(claims.productName),
    n.created_at.toISOString(),
  ]);
}

/**
 * The CSV of the nodes a filter selects (the list's filter, `compute:nodes:read` as `nodes.list`), in id order.
 * The caller is authorized before this returns, so a refusal is an error, not an empty file; rows are then read a
 * batch at a time (keyset on the id) as the consumer pulls, at most NODE_EXPORT_MAX_ROWS. Every cell is
 * spreadsheet-safe (lib/csv.ts): a hostname or label a machine or operator chose never runs as a formula.
 */
export async function exportNodesCsv(
  db: Db,
  principal: Principal,
  input: z.infer<typeof exportNodesInput>,
  options: { maxRows?: number; batch?: number } = {},
): Promise<AsyncGenerator<string>> {
  const { tenantId, filter } = await authorizeNodeFilter(db, principal, input);
  const maxRows = options.maxRows ?? NODE_EXPORT_MAX_ROWS;
  const batch = options.batch ?? NODE_EXPORT_BATCH;
  return (async function* rows() {
    yield csvRow(NODE_CSV_HEADER) + CSV_LINE_BREAK;
    let written = 0;
    let after: string | null = null;
    while (written < maxRows) {
      const page = await nodeExportBatch(db, tenantId, filter, after, Math.min(batch, maxRows - written));
      if (!page.length) return;
      yield page.map((row) => nodeCsvRow(row) + CSV_LINE_BREAK).join('');
      written += page.length;
      after = page[page.length - 1]!.id;
      if (page.length < batch) return;
    }
  })();
}

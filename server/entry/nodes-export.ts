import { DomainError } from '../../protocol/errors';
import type { ApiContext } from '../api/trpc';
import { exportNodesInput } from '../../protocol/api/node-schemas';
import { exportNodesCsv, NODE_EXPORT_MAX_ROWS } from '../nodes/export';
import { coerceQuery, schemaPropertyTypes } from '../api/rest/handler';
import { HttpRefusal } from '../http/body';
import { csvResponse, hitExportLimit, InFlight } from '../http/csv-export';

/** `GET /v1/tenants/{tenantId}/nodes/export.csv`, relative to the base path. */
export const NODES_EXPORT_PATH = /^\/v1\/tenants\/([^/]+)\/nodes\/export\.csv$/;
/** Node exports streaming at once from this process; another is answered 429 until one ends. */
const NODE_EXPORTS_IN_FLIGHT = 4;

const slots = new InFlight(NODE_EXPORTS_IN_FLIGHT, 'node exports');
const propertyTypes = schemaPropertyTypes(exportNodesInput);

/**
 * The nodes a filter selects as CSV, streamed: authenticated and authorized as `nodes.list` (`compute:nodes:read`),
 * filtered by the list's query parameters (`search`, `poolId`, `labels` repeated, `connected=true`, ...), at most
 * NODE_EXPORT_MAX_ROWS rows read a batch at a time as the client reads, counted against the caller's shared
 * export limit. Errors before the first byte are the API's error model.
 */
export async function handleNodesExport(request: Request, tenantId: string, ctx: ApiContext): Promise<Response> {
  if (request.method !== 'GET' && request.method !== 'HEAD') throw new HttpRefusal(405, 'Use GET');
  if (!ctx.principal) throw ctx.authError ?? new DomainError('UNAUTHENTICATED', 'Sign in, or send an API key as Authorization: Bearer');
  const query = coerceQuery(new URL(request.url).searchParams, propertyTypes);
  const parsed = exportNodesInput.safeParse({ ...query, tenantId });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.');
    throw new DomainError('INVALID_ARGUMENT', `${field || 'query'}: ${issue.message}`, { field });
  }
  const rows = await exportNodesCsv(ctx.db, ctx.principal, parsed.data);
  if (request.method === 'GET') await hitExportLimit(ctx.db, ctx.principal);
  const day = new Date().toISOString().slice(0, 10);
  return csvResponse(request, rows, {
    filename: `nodes-${parsed.data.tenantId}-${day}.csv`,
    headers: { 'x-export-row-limit': String(NODE_EXPORT_MAX_ROWS) },
    slots,
    what: 'node export',
  });
}

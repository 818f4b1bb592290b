import { DomainError } from '../../protocol/errors';
import type { ApiContext } from '../api/trpc';
import { auditFilterInput } from '../events/audit-filter';
import { AUDIT_EXPORT_MAX_ROWS, exportAuditCsv } from '../events/export-audit';
import { HttpRefusal } from '../http/body';
import { csvResponse, hitExportLimit, InFlight } from '../http/csv-export';

/** `GET /v1/tenants/{tenantId}/audit/export.csv`, relative to the base path. */
export const AUDIT_EXPORT_PATH = /^\/v1\/tenants\/([^/]+)\/audit\/export\.csv$/;
/** Exports streaming at once from this process; another is answered 429 until one ends. */
export const AUDIT_EXPORTS_IN_FLIGHT = 4;

const slots = new InFlight(AUDIT_EXPORTS_IN_FLIGHT, 'audit exports');

/**
 * The audit log of a tenant as CSV, streamed: authenticated and authorized as `audit.list` (an API key or a
 * console session, `compute:audit:read` on the tenant), filtered by the same query fields, at most
 * AUDIT_EXPORT_MAX_ROWS rows read a batch at a time as the client reads, counted against the caller's shared
 * export limit (server/http/csv-export.ts). Errors before the first byte are the API's error model; a failure
 * while streaming cuts the response (the file then lacks its end).
 */
export async function handleAuditExport(request: Request, tenantId: string, ctx: ApiContext): Promise<Response> {
  if (request.method !== 'GET' && request.method !== 'HEAD') throw new HttpRefusal(405, 'Use GET');
  if (!ctx.principal) throw ctx.authError ?? new DomainError('UNAUTHENTICATED', 'Sign in, or send an API key as Authorization: Bearer');
  const query = Object.fromEntries(new URL(request.url).searchParams);
  const parsed = auditFilterInput.safeParse({ ...query, tenantId });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.');
    throw new DomainError('INVALID_ARGUMENT', `${field || 'query'}: ${issue.message}`, { field });
  }
  const rows = await exportAuditCsv(ctx.db, ctx.principal, parsed.data);
  if (request.method === 'GET') await hitExportLimit(ctx.db, ctx.principal);
  const day = new Date().toISOString().slice(0, 10);
  return csvResponse(request, rows, {
    filename: `audit-${parsed.data.tenantId}-${day}.csv`,
    headers: { 'x-export-row-limit': String(AUDIT_EXPORT_MAX_ROWS) },
    slots,
    what: 'audit export',
  });
}

import type { Db } from '../db/client';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { auditWhere, type AuditFilter } from './audit-filter';
import { toAuditRecords, type AuditRow } from './list-audit';
import { CSV_LINE_BREAK, csvRow } from '../../lib/csv';

/** At most this many entries per export, newest first: a longer history is exported a time range at a time. */
export const AUDIT_EXPORT_MAX_ROWS = 100_000;
/** Entries read per query: the export holds one batch in memory, whatever the number of rows. */
const AUDIT_EXPORT_BATCH = 1_000;

const AUDIT_CSV_HEADER = ['time', 'actor', 'actor_name', 'actor_email', 'action', 'resource', 'reason', 'details'] as const;

/**
 * The CSV of a tenant's audit log under `filter` (`compute:audit:read` on the tenant, as `audit.list`),
 * newest first. The caller is authorized before this returns, so a refusal is an error, not an empty file;
 * the rows are then read a batch at a time (keyset on the id) as the consumer pulls, at most
 * AUDIT_EXPORT_MAX_ROWS. Every field is spreadsheet-safe (lib/csv.ts).
 */
export async function exportAuditCsv(
  db: Db,
  principal: Principal,
  filter: AuditFilter,
  options: { maxRows?: number; batch?: number } = {},
): Promise<AsyncGenerator<string>> {
  await authorize(db, principal, 'compute:audit:read', resource.tenant(filter.tenantId));
  const where = await auditWhere(db, filter);
  const maxRows = options.maxRows ?? AUDIT_EXPORT_MAX_ROWS;
  const batch = options.batch ?? AUDIT_EXPORT_BATCH;
  return (async function* rows() {
    yield csvRow(AUDIT_CSV_HEADER) + CSV_LINE_BREAK;
    let written = 0;
    let before: bigint | null = null;
    while (written < maxRows) {
      const page: AuditRow[] = await db.auditEntry.findMany({
        where: before === null ? where : { AND: [where, { id: { lt: before } }] },
        orderBy: { id: 'desc' },
        take: Math.min(batch, maxRows - written),
      });
      if (!page.length) return;
      let chunk = '';
      for (const entry of await toAuditRecords(db, page)) {
        chunk +=
          csvRow([
            entry.createdAt,
            entry.actor,
            entry.actorName,
            entry.actorEmail,
            entry.action,
            entry.resource,
            entry.reason,
            JSON.stringify(entry.data),
          ]) + CSV_LINE_BREAK;
      }
      yield chunk;
      written += page.length;
      before = page[page.length - 1]!.id;
      if (page.length < batch) return;
    }
  })();
}

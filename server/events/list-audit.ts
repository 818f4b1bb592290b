import { z } from 'zod';
import type { Db } from '../db/client';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { auditFilterFields, auditWhere } from './audit-filter';
import { rowIdPaging } from './list-events';

const auditRecord = z.object({
  id: z.string(),
  /** Who did it, as `operator:op_…`, `api-key:ak_…` or `local:…`. */
  actor: z.string(),
  /** The operator's email when the actor is an operator that still exists. */
  actorEmail: z.string().nullable(),
  /** How the console names the actor: the operator's name, else email; null for actors that are not operators. */
  actorName: z.string().nullable(),
  action: z.string(),
  resource: z.string(),
  /** The reason the actor gave, when the action takes one. */
  reason: z.string().nullable(),
  data: z.record(z.string(), z.unknown()),
  /** The people behind operator actors the data names (e.g. `firstApprovedBy`), so the console shows names. */
  actorNames: z.record(z.string(), z.string()),
  createdAt: z.string(),
});
type AuditRecord = z.infer<typeof auditRecord>;

export const listAuditInput = z.strictObject({
  ...auditFilterFields,
  ...rowIdPaging,
});

export const auditPage = z.object({ items: z.array(auditRecord), nextCursor: z.string().nullable() });

/**
 * A tenant's audit log, newest first: who did what to which resource, when, and why. `actor` and `action`
 * narrow it by substring (an actor search also matches the email of the operator behind `operator:` actors),
 * `actionEquals` and `actorEquals` to one value, `since` and `until` to a time range.
 */
export async function listAudit(
  db: Db,
  principal: Principal,
  input: z.infer<typeof listAuditInput>,
): Promise<{ items: AuditRecord[]; nextCursor: string | null }> {
  await authorize(db, principal, 'compute:audit:read', resource.tenant(input.tenantId));
  const limit = input.limit ?? 100;
  const where = await auditWhere(db, input);
  const rows = await db.auditEntry.findMany({
    where: { ...where, ...(input.cursor ? { id: { lt: BigInt(input.cursor) } } : {}) },
    orderBy: { id: 'desc' },
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  return {
    items: await toAuditRecords(db, page),
    nextCursor: rows.length > limit ? page[page.length - 1]!.id.toString() : null,
  };
}

export type AuditRow = Awaited<ReturnType<Db['auditEntry']['findMany']>>[number];

/** Audit rows as the API answers them, with the names and emails of the operators they name (one query). */
export async function toAuditRecords(db: Db, page: AuditRow[]): Promise<AuditRecord[]> {
  const inData = (data: unknown) =>
    data && typeof data === 'object'
      ? Object.values(data).filter((v): v is string => typeof v === 'string' && v.startsWith('operator:op_'))
      : [];
  const actors = page.flatMap((r) => [r.actor, ...inData(r.data)]);
  const ids = [...new Set(actors.flatMap((a) => (a.startsWith('operator:') ? [a.slice('operator:'.length)] : [])))];
  const operators = await db.operator.findMany({ where: { id: { in: ids } }, select: { id: true, name: true, email: true } });
  const emails = new Map(operators.map((o) => [`operator:${o.id}`, o.email]));
  const names = new Map(operators.map((o) => [`operator:${o.id}`, o.name.trim() || o.email]));
  return page.map((r) => {
    const data = (r.data ?? {}) as Record<string, unknown>;
    return {
      id: r.id.toString(),
      actor: r.actor,
      actorEmail: emails.get(r.actor) ?? null,
      actorName: names.get(r.actor) ?? null,
      action: r.action,
      resource: r.resource,
      reason: typeof data.reason === 'string' ? data.reason : null,
      data,
      actorNames: Object.fromEntries(inData(data).flatMap((a) => (names.has(a) ? [[a, names.get(a)!]] : []))),
      createdAt: r.createdAt.toISOString(),
    };
  });
}

import { z } from 'zod';
import type { Db } from '../db/client';
import type { Prisma } from '../db/generated/client';
import { idOf } from '../../protocol/api/resource-names';

/**
 * What narrows the audit log, the same for the list, its facets and the CSV export: substring searches on the
 * actor and the action, exact facets (one action, one actor), and a time range.
 */
export const auditFilterFields = {
  tenantId: idOf('tnt'),
  /** Part of the actor (`operator:op_…`) or of the operator's email, any case. */
  actor: z.string().trim().max(200).optional(),
  /** Part of the action (`join-token.`, `revoked`), any case. */
  action: z.string().trim().max(100).optional(),
  /** Exactly this action (a value of `audit.facets`' actions). */
  actionEquals: z.string().trim().min(1).max(100).optional(),
  /** Exactly this actor (`operator:op_…`, `api-key:ak_…`, `local:…`; a value of `audit.facets`' actors). */
  actorEquals: z.string().trim().min(1).max(200).optional(),
  /** Only entries at or after this instant (RFC 3339). */
  since: z.iso.datetime({ offset: true }).optional(),
  /** Only entries before this instant (RFC 3339). */
  until: z.iso.datetime({ offset: true }).optional(),
};

export const auditFilterInput = z.strictObject(auditFilterFields);
export type AuditFilter = z.infer<typeof auditFilterInput>;

/** The `audit_log` rows of the filter (the caller is authorized already). */
export async function auditWhere(db: Db, filter: AuditFilter): Promise<Prisma.AuditEntryWhereInput> {
  const actorSearch = filter.actor?.trim();
  const operatorIds = actorSearch
    ? (await db.operator.findMany({ where: { email: { contains: actorSearch, mode: 'insensitive' } }, select: { id: true } })).map(
        (o) => `operator:${o.id}`,
      )
    : [];
  const createdAt = {
    ...(filter.since ? { gte: new Date(filter.since) } : {}),
    ...(filter.until ? { lt: new Date(filter.until) } : {}),
  };
  return {
    tenantId: filter.tenantId,
    AND: [
      actorSearch ? { OR: [{ actor: { contains: actorSearch, mode: 'insensitive' } }, { actor: { in: operatorIds } }] } : {},
      filter.action?.trim() ? { action: { contains: filter.action.trim(), mode: 'insensitive' } } : {},
      filter.actionEquals ? { action: filter.actionEquals } : {},
      filter.actorEquals ? { actor: filter.actorEquals } : {},
      filter.since || filter.until ? { createdAt } : {},
    ],
  };
}

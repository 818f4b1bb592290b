import { z } from 'zod';
import type { Db } from '../db/client';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { idOf, pageDirection } from '../../protocol/api/resource-names';
import { operatorNames } from '../operators/operator-names';
import type { EventRecord } from '../../protocol/api/event-schemas';

/** The paging of the event and audit lists: `cursor` is the `nextCursor` of the previous page (a row id). */
export const rowIdPaging = {
  limit: z.number().int().min(1).max(200).optional(),
  cursor: z
    .string()
    .regex(/^\d{1,18}$/, 'not a cursor from this list')
    .optional(),
  direction: pageDirection,
};

export const listEventsInput = z.strictObject({
  tenantId: idOf('tnt'),
  type: z.string().max(100).optional(),
  /** Only events whose `data.reason` is this (refusals: `join-token:revoked`, …). */
  reason: z.string().max(100).optional(),
  /** Only events about this node (`data.nodeId`): a node page's history. */
  nodeId: idOf('node').optional(),
  /** Only events at or after this instant (RFC 3339). */
  since: z.iso.datetime({ offset: true }).optional(),
  ...rowIdPaging,
});

/** A tenant's own events, newest first, optionally of one type; `cursor` is the last id of the previous page. */
export async function listEvents(
  db: Db,
  principal: Principal,
  input: { tenantId: string; type?: string; reason?: string; nodeId?: string; since?: string; limit?: number; cursor?: string },
): Promise<{ items: EventRecord[]; nextCursor: string | null }> {
  await authorize(db, principal, 'compute:events:read', resource.tenant(input.tenantId));
  const limit = input.limit ?? 100;
  const rows = await db.event.findMany({
    where: {
      tenantId: input.tenantId,
      ...(input.type ? { type: input.type } : {}),
      // Two paths into `data` cannot share one key of the filter object: each is its own AND term.
      AND: [
        ...(input.reason ? [{ data: { path: ['reason'], equals: input.reason } }] : []),
        ...(input.nodeId ? [{ data: { path: ['nodeId'], equals: input.nodeId } }] : []),
      ],
      ...(input.since ? { createdAt: { gte: new Date(input.since) } } : {}),
      ...(input.cursor ? { id: { lt: BigInt(input.cursor) } } : {}),
    },
    orderBy: { id: 'desc' },
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  const names = await operatorNames(
    db,
    page.flatMap((r) => operatorActorsIn(r.data)),
  );
  return {
    items: page.map((r) => ({
      id: r.id.toString(),
      tenantId: r.tenantId,
      type: r.type,
      data: r.data as Record<string, unknown>,
      createdAt: r.createdAt.toISOString(),
      actorNames: Object.fromEntries(operatorActorsIn(r.data).flatMap((a) => (names.has(a) ? [[a, names.get(a)!]] : []))),
    })),
    nextCursor: rows.length > limit ? page[page.length - 1]!.id.toString() : null,
  };
}

/** The `operator:op_…` strings among an event's top-level data values. */
function operatorActorsIn(data: unknown): string[] {
  if (!data || typeof data !== 'object') return [];
  return Object.values(data).filter((v): v is string => typeof v === 'string' && v.startsWith('operator:op_'));
}

import { z } from 'zod';
import type { Db } from '../db/client';
import { sql } from 'kysely';
import { typed } from '../db/typed';
import { authorize, resource } from '../authz/authorize';
import type { Principal } from '../authz/principal';
import { idOf } from '../../protocol/api/resource-names';
import { operatorNames } from '../operators/operator-names';

/** At most this many values per facet, the most frequent first. */
const AUDIT_FACET_LIMIT = 100;
/** The facets count the newest this many entries of the range: one page view reads a bounded number of rows. */
const AUDIT_FACET_SCAN = 50_000;

export const auditFacetsInput = z.strictObject({
  tenantId: idOf('tnt'),
  /** Count only entries at or after this instant (RFC 3339). */
  since: z.iso.datetime({ offset: true }).optional(),
  /** Count only entries before this instant (RFC 3339). */
  until: z.iso.datetime({ offset: true }).optional(),
});

export const auditFacets = z.object({
  actions: z.array(z.object({ value: z.string(), count: z.number().int() })),
  /** `name`: how the console names an operator actor (name, else email); null for other actors. */
  actors: z.array(z.object({ value: z.string(), name: z.string().nullable(), count: z.number().int() })),
});

/**
 * The actions and actors of a tenant's audit log in the time range, with how many entries each has: what the
 * console's Action and Actor filters offer. Counted over the range's newest AUDIT_FACET_SCAN entries (read by
 * the tenant's id index), each answer at most AUDIT_FACET_LIMIT values.
 */
export async function listAuditFacets(
  db: Db,
  principal: Principal,
  input: z.infer<typeof auditFacetsInput>,
): Promise<z.infer<typeof auditFacets>> {
  await authorize(db, principal, 'compute:audit:read', resource.tenant(input.tenantId));
  const newest = typed(db)
    .selectFrom('audit_log')
    .select(['action', 'actor'])
    .where('tenant_id', '=', input.tenantId)
    .$if(input.since !== undefined, (q) => q.where('created_at', '>=', new Date(input.since!)))
    .$if(input.until !== undefined, (q) => q.where('created_at', '<', new Date(input.until!)))
    .orderBy('id', 'desc')
    .limit(AUDIT_FACET_SCAN)
    .as('newest');
  const grouped = (column: 'action' | 'actor') =>
    typed(db)
      .selectFrom(newest)
      .select((eb) => [eb.ref(column).as('value'), sql<number>`count(*)::int`.as('count')])
      .groupBy(column)
      .orderBy('count', 'desc')
      .orderBy('value')
      .limit(AUDIT_FACET_LIMIT)
      .execute();
  const [actions, actors] = await Promise.all([grouped('action'), grouped('actor')]);
  const names = await operatorNames(
    db,
    actors.map((a) => a.value),
  );
  return { actions, actors: actors.map((a) => ({ ...a, name: names.get(a.value) ?? null })) };
}

import { z } from 'zod';
import { sql } from 'kysely';
import type { Db } from '../db/client';
import { typed } from '../db/typed';
import { pendingStateAsRead } from '../rules/dry-run-sql';
import type { Principal } from '../authz/principal';
import { writeAudit } from '../events/publish';
import { DomainError } from '../../protocol/errors';
import { idOf } from '../../protocol/api/resource-names';
import { loadSite } from '../sites/sites';
import type { unmatchedAnswer } from '../../protocol/api/expected-schemas';

export const deleteExpectedInput = z
  .strictObject({
    tenantId: idOf('tnt'),
    siteId: idOf('site'),
    /** These entries, or every entry of one import that has not arrived. */
    ids: z.array(idOf('exm')).min(1).max(1_000).optional(),
    importId: idOf('imp').optional(),
  })
  .refine((v) => (v.ids === undefined) !== (v.importId === undefined), { message: 'name either ids or importId', path: ['ids'] });

/**
 * `expectedMachines.delete` (`compute:sites:manage`): removes entries that have not arrived (an arrived
 * entry is the record of a decision and stays). Unknown ids are NOT_FOUND only when none was deleted.
 */
export async function deleteExpectedMachines(db: Db, principal: Principal, input: z.infer<typeof deleteExpectedInput>) {
  const site = await loadSite(db, principal, 'compute:sites:manage', input);
  return db.$transaction(async (tx) => {
    const where = {
      siteId: site.id,
      tenantId: site.ownerTenantId,
      arrivedAt: null,
      ...(input.ids ? { id: { in: input.ids } } : { importId: input.importId! }),
    };
    const { count } = await tx.expectedMachine.deleteMany({ where });
    if (!count)
      throw new DomainError(
        'NOT_FOUND',
        input.ids ? 'No such expected machine waiting in this site' : `Import ${input.importId} has no waiting machine in this site`,
      );
    await writeAudit(tx, {
      tenantId: site.ownerTenantId,
      actor: principal.actor,
      action: 'expected-machines.deleted',
      resource: `compute-site/${site.id}`,
      data: { deleted: count, importId: input.importId ?? null },
    });
    return { deleted: count };
  });
}

export const unmatchedInput = z.strictObject({
  tenantId: idOf('tnt'),
  siteId: idOf('site'),
  limit: z.number().int().min(1).max(200).default(100),
});

/**
 * `expectedMachines.unmatched` (`compute:sites:read`): discovery arrivals of the last 7 days that no expected
 * machine admitted (waiting, decided by a person or a rule, or refused), newest first: what an import missed.
 */
export async function listUnmatchedArrivals(
  db: Db,
  principal: Principal,
  input: z.infer<typeof unmatchedInput>,
): Promise<z.infer<typeof unmatchedAnswer>> {
  const site = await loadSite(db, principal, 'compute:sites:read', input);
  const rows = await typed(db)
    .selectFrom('join_requests')
    .select((eb) => ['id', pendingStateAsRead(eb).as('state'), 'mac', 'claims', 'decided_by', 'created_at'])
    .where('tenant_id', '=', site.ownerTenantId)
    .where('site_id', '=', site.id)
    .where('attestor', '=', 'discovery')
    .where('created_at', '>', sql<Date>`compute_now() - interval '7 days'`)
    .where((eb) => eb.or([eb('decided_by', 'is', null), eb('decided_by', 'not like', 'import:%')]))
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .limit(input.limit)
    .$narrowType<{ claims: Record<string, unknown> | null }>()
    .execute();
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  return {
    items: rows.map((r) => ({
      requestId: r.id,
      state: r.state,
      mac: r.mac,
      hostname: str(r.claims?.hostname),
      serial: str(r.claims?.productSerial),
      productUuid: str(r.claims?.productUuid),
      decidedBy: r.decided_by,
      createdAt: r.created_at.toISOString(),
    })),
  };
}

import { z } from 'zod';
import { sql } from 'kysely';
import type { Db } from '../db/client';
import { typed } from '../db/typed';
import { DomainError } from '../../protocol/errors';
import type { Principal } from '../authz/principal';
import { writeAudit } from '../events/publish';
import { newId } from '../ids';
import { idOf } from '../../protocol/api/resource-names';
import { labelsSchema } from '../../protocol/api/labels';
import { loadSite } from '../sites/sites';
import { parseExpectedMachines, resolvePool, type PoolChoice } from './parse';
import type { expectedList, importExpectedAnswer } from '../../protocol/api/expected-schemas';

/** At most this many rows per import; tRPC and REST bodies are capped at 1 MiB anyway. */
const IMPORT_MAX_ROWS = 20_000;

export const importExpectedInput = z.strictObject({
  tenantId: idOf('tnt'),
  siteId: idOf('site'),
  format: z.enum(['csv', 'json']),
  content: z.string().min(1).max(1_048_576),
  /** The pool of rows that name none: its id or its name. */
  defaultPoolId: z.string().trim().min(1).max(200).optional(),
  /** true: parse and answer the preview, save nothing. */
  preview: z.boolean().default(false),
  /**
   * A large file sent in parts (the console sends 2,000 rows per call, to show progress): the rows before
   * this part, so row numbers and entry ids continue; and the import id the first part answered.
   */
  rowOffset: z.number().int().min(0).max(1_000_000).default(0),
  importId: idOf('imp').optional(),
  /** Labels every row's node gets when it arrives; a row's own `labels` override these keys. */
  labels: labelsSchema.optional(),
});
export const listExpectedInput = z.strictObject({
  tenantId: idOf('tnt'),
  siteId: idOf('site'),
  state: z.enum(['waiting', 'arrived']).default('waiting'),
  limit: z.number().int().min(1).max(200).default(100),
});

/**
 * `expectedMachines.import` (`compute:sites:manage`): parses a CSV or JSON list of expected machines and,
 * unless `preview`, stores the accepted rows in one statement (10,000 rows in one round trip). Rejected rows
 * are listed with why, and never stop the others.
 */
export async function importExpectedMachines(
  db: Db,
  principal: Principal,
  input: z.infer<typeof importExpectedInput>,
): Promise<z.infer<typeof importExpectedAnswer>> {
  const site = await loadSite(db, principal, 'compute:sites:manage', input);
  const pools: PoolChoice[] = (
    await db.pool.findMany({
      where: { siteId: site.id, ownerTenantId: site.ownerTenantId },
      select: { id: true, name: true, agent: true, archivedAt: true },
    })
  ).map((p) => ({
    id: p.id,
    name: p.name,
    // Expected machines join through discovery, which boots bcd: only a live bcd pool can take them.
    unusable: p.archivedAt ? 'is archived' : p.agent !== 'bcd' ? `runs ${p.agent}, not bcd` : null,
  }));
  const siteName = `${site.name} (${site.id})`;
  const defaultPool = input.defaultPoolId ? resolvePool(input.defaultPoolId, pools, siteName) : null;
  if (defaultPool && 'reason' in defaultPool)
    throw new DomainError('NOT_FOUND', `Default ${defaultPool.reason}`, { field: 'defaultPoolId' });
  const parsed = parseExpectedMachines(input.format, input.content, pools, defaultPool?.poolId ?? null, siteName, input.labels ?? {});
  const { error } = parsed;
  const accepted = parsed.accepted.map((r) => ({ ...r, row: r.row + input.rowOffset }));
  const rejected = parsed.rejected.map((r) => ({ ...r, row: r.row + input.rowOffset }));
  if (error) throw new DomainError('INVALID_ARGUMENT', error, { field: 'content' });
  if (accepted.length > IMPORT_MAX_ROWS)
    throw new DomainError('INVALID_ARGUMENT', `content: at most ${IMPORT_MAX_ROWS} rows per import`, { field: 'content' });
  const sample = accepted.slice(0, 20);
  if (input.preview || !accepted.length) return { importId: input.importId ?? null, accepted: accepted.length, rejected, sample };
  if (
    input.importId &&
    !(await db.expectedMachine.findFirst({ where: { importId: input.importId, siteId: site.id }, select: { id: true } }))
  ) {
    throw new DomainError('NOT_FOUND', `Import ${input.importId} not found in site ${site.id}`, { field: 'importId' });
  }
  const importId = input.importId ?? newId('imp');
  await db.$transaction(async (tx) => {
    // One statement for every row: arrays, one per column, unnested together (a VALUES list of 10,000 rows
    // would pass PostgreSQL's limit of 65,535 parameters).
    const column = <T>(pick: (r: (typeof accepted)[number]) => T, type: string) => sql<T[]>`${accepted.map(pick)}::${sql.raw(type)}[]`;
    const rows = sql<ImportedRow>`unnest(${sql.join([
      column((r) => r.serial, 'text'),
      column((r) => r.productUuid, 'text'),
      column((r) => r.mac, 'text'),
      column((r) => r.gpuUuid, 'text'),
      column((r) => r.poolId, 'text'),
      column((r) => r.hostname, 'text'),
      column((r) => r.expiresAt, 'timestamptz'),
      column((r) => r.row, 'int'),
      column((r) => JSON.stringify(r.labels), 'jsonb'),
    ])})`.as<'x'>(sql`x(serial, uuid, mac, gpu, pool, host, expires, n, labels)`);
    await typed(tx)
      .insertInto('expected_machines')
      .columns([
        'id',
        'tenant_id',
        'site_id',
        'import_id',
        'serial',
        'product_uuid',
        'mac',
        'gpu_uuid',
        'pool_id',
        'hostname',
        'expires_at',
        'created_by',
        'labels',
      ])
      .expression((eb) =>
        eb
          .selectFrom(rows)
          .select((x) => [
            sql<string>`'exm_' || ${importId.slice(4)} || lpad(${x.ref('x.n')}::text, 7, '0')`.as('id'),
            x.val(site.ownerTenantId).as('tenant_id'),
            x.val(site.id).as('site_id'),
            x.val(importId).as('import_id'),
            'x.serial',
            'x.uuid',
            'x.mac',
            'x.gpu',
            'x.pool',
            'x.host',
            'x.expires',
            x.val(principal.actor).as('created_by'),
            'x.labels',
          ]),
      )
      .execute();
    await writeAudit(tx, {
      tenantId: site.ownerTenantId,
      actor: principal.actor,
      action: 'expected-machines.imported',
      resource: `compute-site/${site.id}`,
      data: { importId, accepted: accepted.length, rejected: rejected.length },
    });
  });
  return { importId, accepted: accepted.length, rejected, sample };
}

/** One row of an import as the insert unnests it. */
interface ImportedRow {
  serial: string | null;
  uuid: string | null;
  mac: string | null;
  gpu: string | null;
  pool: string;
  host: string | null;
  expires: string | null;
  n: number;
  labels: unknown;
}

/** `expectedMachines.list` (`compute:sites:read`): the site's expected machines that have not arrived yet (or have). */
export async function listExpectedMachines(
  db: Db,
  principal: Principal,
  input: z.infer<typeof listExpectedInput>,
): Promise<z.infer<typeof expectedList>> {
  const site = await loadSite(db, principal, 'compute:sites:read', input);
  const where = { siteId: site.id, tenantId: site.ownerTenantId, arrivedAt: input.state === 'arrived' ? { not: null } : null };
  const [total, rows] = await Promise.all([
    db.expectedMachine.count({ where }),
    db.expectedMachine.findMany({ where, orderBy: [{ createdAt: 'desc' }, { id: 'asc' }], take: input.limit }),
  ]);
  return {
    total,
    items: rows.map((r) => ({
      id: r.id,
      importId: r.importId,
      serial: r.serial,
      productUuid: r.productUuid,
      mac: r.mac,
      gpuUuid: r.gpuUuid,
      poolId: r.poolId,
      hostname: r.hostname,
      expiresAt: r.expiresAt?.toISOString() ?? null,
      arrivedAt: r.arrivedAt?.toISOString() ?? null,
      requestId: r.requestId,
      labels: (r.labels ?? {}) as Record<string, string>,
    })),
  };
}

import type { Compilable } from 'kysely';
import type { Db } from '../db/client';
import { Prisma } from '../db/generated/client';
import { typed } from '../db/typed';
import type { NodeFilter } from '../../protocol/api/node-filter';
import { liveSession, nodePageQuery } from './node-filter';

/**
 * One batch of the nodes `filter` selects, in id order after `after`, with their pool's and site's names and
 * whether a session is live (by the database's clock): a keyset page, so an export holds one batch at a time.
 */
export function nodeExportBatch(db: Db, tenantId: string, filter: NodeFilter, after: string | null, limit: number) {
  const query = nodePageQuery(typed(db), tenantId, filter, { after, limit })
    .leftJoin('pools as p', 'p.id', 'n.pool_id')
    .leftJoin('sites as s', 's.id', 'n.site_id')
    .select((eb) => [
      'n.id',
      'n.claims',
      'n.labels',
      'n.state',
      'n.cordoned',
      'n.pool_id',
      'p.name as pool_name',
      'n.site_id',
      's.name as site_name',
      'n.role',
      'n.attestor',
      'n.trust',
      eb('n.hardware_key', 'is not', null).$castTo<boolean>().as('has_hardware_key'),
      'n.hardware_key_trusted',
      'n.trust_version',
      'n.cert_not_after',
      'n.created_at',
      liveSession(eb).$castTo<boolean>().as('connected'),
    ]);
  return throughQueryRaw(db, query);
}

/**
 * Runs a compiled typed query on Prisma's tagged-template path (`$queryRaw`), the path the export has always
 * read through: its test proves the memory bound by counting those calls, one per batch. Kysely numbers its
 * parameters `$1…$n` in order, so the text splits into the strings between them.
 */
function throughQueryRaw<R>(db: Db, query: Compilable<R>): Promise<R[]> {
  const compiled = query.compile();
  const strings = compiled.sql.split(/\$\d+/);
  if (strings.length !== compiled.parameters.length + 1) throw new Error('A compiled export query has stray $n text');
  return db.$queryRaw<R[]>(new Prisma.Sql(strings, compiled.parameters as unknown[]));
}

/** One node as its CSV row reads it. */
export type NodeExportRow = Awaited<ReturnType<typeof nodeExportBatch>>[number];

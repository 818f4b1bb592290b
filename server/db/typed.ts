import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type RootOperationNode,
} from 'kysely';
import type { Tx } from './client';
import type { DB } from './generated/kysely/types';

/**
 * The typed SQL layer (docs/decisions/typed-sql.md): Kysely queries whose tables and columns come from
 * prisma/schema.prisma (the prisma-kysely generator writes server/db/generated/kysely/types.ts), sent through
 * the Prisma client or interactive transaction they are given. There is one transaction type, `Tx`: a domain
 * function that takes `tx` may mix Prisma model calls and `typed(tx)` queries, and both commit or roll back
 * together.
 *
 *   const rows = await typed(tx).selectFrom('nodes').select(['id', 'state']).where('tenant_id', '=', t).execute();
 *
 * Values come back as Kysely's types say: bytea as Buffer, timestamptz as Date, int8 as bigint, json parsed.
 */
export type Typed = Kysely<DB>;

const cache = new WeakMap<Tx, Typed>();

/** The typed query builder over `tx` (the client, or a transaction's client: queries then run inside it). */
export function typed(tx: Tx): Typed {
  let db = cache.get(tx);
  if (!db) {
    const driver = new PrismaDriver(tx);
    db = new Kysely<DB>({
      dialect: {
        createAdapter: () => new PostgresAdapter(),
        createDriver: () => driver,
        createIntrospector: (k) => new PostgresIntrospector(k),
        createQueryCompiler: () => new PostgresQueryCompiler(),
      },
    });
    cache.set(tx, db);
  }
  return db;
}

/** Statements that answer rows: Prisma's query path; the rest go through its execute path for the row count. */
function returnsRows(node: RootOperationNode): boolean {
  if (node.kind === 'SelectQueryNode' || node.kind === 'RawNode') return true;
  return 'returning' in node && node.returning !== undefined;
}

/** Prisma answers bytea as Uint8Array; the generated types (and the rest of the server) use Buffer. */
function withBuffers(row: Record<string, unknown>): Record<string, unknown> {
  for (const key in row) {
    const value = row[key];
    if (value instanceof Uint8Array && !Buffer.isBuffer(value)) row[key] = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  }
  return row;
}

class PrismaConnection implements DatabaseConnection {
  constructor(private readonly tx: Tx) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const parameters = compiled.parameters as unknown[];
    if (returnsRows(compiled.query)) {
      const rows = await this.tx.$queryRawUnsafe<Record<string, unknown>[]>(compiled.sql, ...parameters);
      return { rows: rows.map(withBuffers) as R[] };
    }
    const count = await this.tx.$executeRawUnsafe(compiled.sql, ...parameters);
    return { rows: [], numAffectedRows: BigInt(count) };
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('The typed layer does not stream; page with limit/offset or keyset instead');
  }
}

/**
 * Transactions belong to Prisma (`db.$transaction(async (tx) => …typed(tx)…)`): Kysely's own transaction calls
 * are refused, so there is one way to open one.
 */
class PrismaDriver implements Driver {
  private readonly connection: PrismaConnection;

  constructor(tx: Tx) {
    this.connection = new PrismaConnection(tx);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return this.connection;
  }

  async beginTransaction(): Promise<void> {
    throw new Error('Open transactions with Prisma ($transaction) and pass its client to typed()');
  }

  async commitTransaction(): Promise<void> {
    throw new Error('Open transactions with Prisma ($transaction) and pass its client to typed()');
  }

  async rollbackTransaction(): Promise<void> {
    throw new Error('Open transactions with Prisma ($transaction) and pass its client to typed()');
  }

  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {}
}

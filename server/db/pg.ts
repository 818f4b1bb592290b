import pg from 'pg';

/**
 * A plain node-postgres pool for the join hot path. Prisma's interactive transactions cost several
 * milliseconds each; JoinService batches many joins into one transaction of a few statements instead.
 */
export function createPgPool(databaseUrl: string, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max });
  // An idle client's error (a restarted database) must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  // pg-pool listens only to its idle clients: a connection that breaks while it is checked out and between
  // two statements (a transaction signing certificates when the primary is killed or fails over) emitted an
  // unhandled 'error' that ended the process. Each client keeps a listener of its own: the next statement on
  // it fails instead, the caller's ROLLBACK path runs, and release() drops the broken client.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

import pg from 'pg';

/**
 * A plain node-postgres pool for the join hot path. Prisma's interactive transactions cost several
 * milliseconds each; JoinService batches many joins into one transaction of a few statements instead.
 */
export function createPgPool(databaseUrl: string, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max });
  // An idle client's error (a restarted database) must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  return pool;
}

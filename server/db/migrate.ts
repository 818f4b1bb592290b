import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/** Prisma Migrate's own advisory lock key, so our runner and `prisma migrate deploy` exclude each other. */
const PRISMA_ADVISORY_LOCK = 72707369;

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../prisma/migrations', import.meta.url));

const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum" VARCHAR(64) NOT NULL,
  "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL,
  "logs" TEXT,
  "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

/**
 * How long one statement of a migration waits for a table lock before the migration lets go and tries again. A
 * migration runs while the previous release serves (a rolling upgrade): an `ALTER TABLE` waiting behind one long
 * transaction would otherwise queue every later query on that table behind it, and stop the service.
 */
const LOCK_TIMEOUT_MS = 2_000;
/** Tries of one migration that gave up on a lock or lost a deadlock, before the start fails. */
const LOCK_ATTEMPTS = 30;
/** lock_not_available (lock_timeout), deadlock_detected. */
const LOCK_ERRORS = new Set(['55P03', '40P01']);

interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

export async function readMigrations(dir = MIGRATIONS_DIR): Promise<MigrationFile[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

/**
 * Applies pending migrations in name order under Prisma's advisory lock, recording each in
 * `_prisma_migrations` as Prisma Migrate does. Each migration runs in its own transaction, so a failing
 * one leaves nothing half-applied; an applied migration whose file changed is refused. A migration that waits
 * longer than `lockTimeoutMs` for a lock, or loses a deadlock, to the instances serving meanwhile is rolled
 * back and tried again a little later.
 */
export async function migrate(
  databaseUrl: string,
  options: { dir?: string; log?: (line: string) => void; lockTimeoutMs?: number } = {},
): Promise<{ applied: string[] }> {
  const lockTimeoutMs = options.lockTimeoutMs ?? LOCK_TIMEOUT_MS;
  const migrations = await readMigrations(options.dir);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [PRISMA_ADVISORY_LOCK]);
    await client.query(CREATE_MIGRATIONS_TABLE);
    const { rows } = await client.query<{
      migration_name: string;
      checksum: string;
      finished_at: Date | null;
      rolled_back_at: Date | null;
    }>('SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations"');
    const done = new Map(rows.filter((r) => r.rolled_back_at === null).map((r) => [r.migration_name, r]));
    for (const row of done.values()) {
      if (row.finished_at === null) {
        throw new Error(
          `Migration ${row.migration_name} failed earlier and was never resolved; fix the database, then mark it rolled back`,
        );
      }
    }
    for (const migration of migrations) {
      const previous = done.get(migration.name);
      if (previous) {
        if (previous.checksum !== migration.checksum) {
          throw new Error(`Migration ${migration.name} was edited after it was applied (checksum mismatch)`);
        }
        continue;
      }
      options.log?.(`applying migration ${migration.name}`);
      for (let attempt = 1; ; attempt++) {
        try {
          await client.query('BEGIN');
          await client.query(`SET LOCAL lock_timeout = ${Math.trunc(lockTimeoutMs)}`);
          await client.query(migration.sql);
          await client.query(
            `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, finished_at, applied_steps_count)
             VALUES ($1, $2, $3, now(), now(), 1)`,
            [randomUUID(), migration.checksum, migration.name],
          );
          await client.query('COMMIT');
          break;
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {});
          const code = (error as { code?: string }).code;
          if (code && LOCK_ERRORS.has(code) && attempt < LOCK_ATTEMPTS) {
            // Rolled back whole: the tables are free again for the running instances until the next try.
            const wait = Math.min(5_000, 250 * attempt);
            options.log?.(`migration ${migration.name} could not take its locks under load (${code}); retrying in ${wait} ms`);
            await new Promise((resolve) => setTimeout(resolve, wait));
            continue;
          }
          throw new Error(`Migration ${migration.name} failed: ${(error as Error).message}`, { cause: error });
        }
      }
      applied.push(migration.name);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_ADVISORY_LOCK]).catch(() => {});
    await client.end();
  }
  return { applied };
}

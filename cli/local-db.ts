import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createDb, type Db } from '../server/db/client';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../server/db/embedded';
import { migrate } from '../server/db/migrate';
import { dataDirectory } from '../server/boot/data-dir';

/** The port of the embedded PostgreSQL that a running server started, read from its postmaster.pid. */
function runningEmbeddedUrl(dataDir: string): string | null {
  const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  try {
    process.kill(pid, 0);
  } catch {
    return null;
  }
  const password = readFileSync(path.join(dataDir, 'postgres-password'), 'utf8').trim();
  return `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/better_compute`;
}

/**
 * Runs `fn` directly on the database, for the commands an operator runs on the server machine before any
 * API key exists: DATABASE_URL if set, else the embedded database of the data directory (the running
 * server's, or one started for this command and stopped after it).
 */
export async function withLocalDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
  let url = process.env.DATABASE_URL;
  let embedded: EmbeddedDatabase | undefined;
  if (!url) {
    const dataDir = dataDirectory();
    url = runningEmbeddedUrl(dataDir) ?? undefined;
    if (!url) {
      embedded = await startEmbeddedDatabase(dataDir);
      url = embedded.url;
    }
  }
  await migrate(url);
  const db = createDb(url, { max: 2 });
  try {
    return await fn(db);
  } finally {
    await db.$disconnect();
    await embedded?.stop();
  }
}

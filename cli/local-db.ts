import { createDb, type Db } from '../server/db/client';
import { runningEmbeddedDatabaseUrl, startEmbeddedDatabase, type EmbeddedDatabase } from '../server/db/embedded';
import { migrate } from '../server/db/migrate';
import { dataDirectory } from '../server/boot/data-dir';

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
    url = runningEmbeddedDatabaseUrl(dataDir) ?? undefined;
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

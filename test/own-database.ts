import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { createDb, type Db } from '../server/db/client';
import { createMigratedDatabase, dropDatabase } from './db';

// A migrated database of the test file's own, for what is one row in the shared one (the PKI bundle). `db` is set
// by useOwnDatabase()'s beforeAll; each test file has its own (integration files do not share modules).

export let db: Db;

/** Creates the file's database (`<prefix>_<random>`) before its tests, and drops it after them. */
export function useOwnDatabase(prefix: string) {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  beforeAll(async () => {
    db = createDb(await createMigratedDatabase(name), { max: 4 });
  });
  afterAll(async () => {
    await db?.$disconnect();
    await dropDatabase(name);
  });
}

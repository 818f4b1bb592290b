import { inject } from 'vitest';
import { createDb, type Db } from '../server/db/client';

/** The migrated test database's URL, provided by test/global-setup.ts. */
export const testDatabaseUrl = () => inject('databaseUrl');

let shared: Db | undefined;
export function testDb(): Db {
  shared ??= createDb(testDatabaseUrl(), { max: 30 });
  return shared;
}

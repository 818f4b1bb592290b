import pg from 'pg';
import { inject } from 'vitest';
import { createDb, type Db } from '../server/db/client';

/** The migrated test database's URL, provided by test/global-setup.ts. */
export const testDatabaseUrl = () => inject('databaseUrl');

let shared: Db | undefined;
export function testDb(): Db {
  shared ??= createDb(testDatabaseUrl(), { max: 30 });
  return shared;
}

/** Runs one statement on the test cluster through the test database (CREATE and DROP DATABASE need that). */
async function onTestCluster(sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: testDatabaseUrl() });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

/**
 * An empty database `name` on the test cluster, dropped first if a previous run left it, for tests that need
 * a database of their own (migrations, singletons). Not migrated. Returns its URL.
 */
export async function createFreshDatabase(name: string): Promise<string> {
  await onTestCluster(`DROP DATABASE IF EXISTS "${name}"`);
  await onTestCluster(`CREATE DATABASE "${name}"`);
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A migrated database `name` of its own on the test cluster (dropped first if a previous run left it): a clone
 * of the template database that test/global-setup.ts migrated, so it holds exactly what `migrate()` writes,
 * `_prisma_migrations` included, without running the migrations again. Returns its URL.
 */
export async function createMigratedDatabase(name: string): Promise<string> {
  await onTestCluster(`DROP DATABASE IF EXISTS "${name}"`);
  await onTestCluster(`CREATE DATABASE "${name}" TEMPLATE "${inject('templateDatabase')}"`);
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops a database made by {@link createFreshDatabase} or {@link createMigratedDatabase}, closing any connection still open to it. */
export async function dropDatabase(name: string): Promise<void> {
  await onTestCluster(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}

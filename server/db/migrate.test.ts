import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createFreshDatabase } from '../../test/db';
import { migrate, readMigrations } from './migrate';

async function query<T extends pg.QueryResultRow>(url: string, sql: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('migrate', () => {
  it('applies every migration once and records it the way Prisma does', async () => {
    const url = await createFreshDatabase('mig_once');
    const files = await readMigrations();
    const first = await migrate(url);
    expect(first.applied).toEqual(files.map((f) => f.name));
    const second = await migrate(url);
    expect(second.applied).toEqual([]);
    const rows = await query<{ migration_name: string; checksum: string; finished_at: Date | null; applied_steps_count: number }>(
      url,
      'SELECT migration_name, checksum, finished_at, applied_steps_count FROM "_prisma_migrations" ORDER BY migration_name',
    );
    expect(rows.map((r) => [r.migration_name, r.checksum])).toEqual(files.map((f) => [f.name, f.checksum]));
    expect(rows.every((r) => r.finished_at !== null && r.applied_steps_count === 1)).toBe(true);
    expect(files[0]!.checksum).toMatch(/^[0-9a-f]{64}$/);
  });

  it('lets two instances start together without racing', async () => {
    const url = await createFreshDatabase('mig_race');
    const results = await Promise.all([migrate(url), migrate(url), migrate(url)]);
    const applied = results.flatMap((r) => r.applied);
    expect(applied.sort()).toEqual((await readMigrations()).map((f) => f.name).sort());
    const { count } = (await query<{ count: string }>(url, 'SELECT count(*) FROM "_prisma_migrations"'))[0]!;
    expect(Number(count)).toBe(applied.length);
  });

  it('rolls a failing migration back whole and refuses an edited one', async () => {
    const url = await createFreshDatabase('mig_fail');
    const dir = await mkdtemp(path.join(tmpdir(), 'mig-'));
    await mkdir(path.join(dir, '001_ok'));
    await writeFile(path.join(dir, '001_ok', 'migration.sql'), 'CREATE TABLE a (id int);');
    await mkdir(path.join(dir, '002_bad'));
    await writeFile(path.join(dir, '002_bad', 'migration.sql'), 'CREATE TABLE b (id int); SELECT no_such_function();');
    await expect(migrate(url, { dir })).rejects.toThrow(/002_bad failed/);
    const tables = await query<{ tablename: string }>(url, "SELECT tablename FROM pg_tables WHERE tablename IN ('a','b')");
    expect(tables.map((t) => t.tablename)).toEqual(['a']);
    const recorded = await query<{ migration_name: string }>(url, 'SELECT migration_name FROM "_prisma_migrations"');
    expect(recorded.map((r) => r.migration_name)).toEqual(['001_ok']);

    await writeFile(path.join(dir, '001_ok', 'migration.sql'), 'CREATE TABLE a (id bigint);');
    await expect(migrate(url, { dir })).rejects.toThrow(/edited after it was applied/);
  });

  it('lets go of a lock it waits for under load, so the tables stay readable, and applies the migration later', async () => {
    const url = await createFreshDatabase('mig_lock');
    const dir = await mkdtemp(path.join(tmpdir(), 'mig-'));
    await mkdir(path.join(dir, '001_table'));
    await writeFile(path.join(dir, '001_table', 'migration.sql'), 'CREATE TABLE t (id int); INSERT INTO t VALUES (1);');
    await migrate(url, { dir });
    await mkdir(path.join(dir, '002_column'));
    await writeFile(path.join(dir, '002_column', 'migration.sql'), 'ALTER TABLE t ADD COLUMN note TEXT;');

    // A long transaction of a running release holds the table; the migration's ALTER TABLE must wait for it.
    const holder = new pg.Client({ connectionString: url });
    const reader = new pg.Client({ connectionString: url });
    await Promise.all([holder.connect(), reader.connect()]);
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT * FROM t');
      const log: string[] = [];
      const migrating = migrate(url, { dir, lockTimeoutMs: 200, log: (line) => log.push(line) });
      await expect.poll(() => log.some((line) => line.includes('retrying')), { timeout: 10_000 }).toBe(true);
      // A waiting ALTER TABLE queues every later reader of the table behind it; one that lets go does not.
      const read = reader.query('SELECT count(*) FROM t');
      const answered = await Promise.race([read.then(() => true), new Promise((r) => setTimeout(() => r(false), 10_000))]);
      expect(answered, 'a reader of the table stayed blocked behind the waiting migration').toBe(true);
      await holder.query('COMMIT');
      expect((await migrating).applied).toEqual(['002_column']);
    } finally {
      await holder.end().catch(() => {});
      await reader.end().catch(() => {});
    }
    const columns = await query<{ column_name: string }>(url, "SELECT column_name FROM information_schema.columns WHERE table_name = 't'");
    expect(columns.map((c) => c.column_name).sort()).toEqual(['id', 'note']);
  });
});

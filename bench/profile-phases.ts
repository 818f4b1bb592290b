/**
 * `--profile DIR` for the benchmarks (bench/sessions.ts, bench/renew.ts): per measured phase, a V8 CPU profile
 * of the API's and the gateway's main threads (bench/profile-preload.ts in each, started and stopped over IPC),
 * the CPU of each of their threads and of PostgreSQL from /proc, and PostgreSQL's statement statistics
 * (pg_stat_statements, loaded by restarting the embedded cluster with it; the product's flags are untouched)
 * and database counters. Each phase writes `<name>-<role>.cpuprofile` files and `<name>.json`;
 * `npx tsx bench/profile-summary.ts DIR` turns them into tables. Without `--profile` every call here does nothing.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../server/db/embedded';
import { treeCpuSeconds } from './cpu';

const TICKS = 100; // USER_HZ on Linux

/** Extra node flags, environment and stdio for a child the benchmark starts (nothing without a directory). */
export function profiledChild(dir: string | undefined, role: string) {
  if (!dir) return { execArgv: [] as string[], env: {} as Record<string, string>, ipc: false };
  mkdirSync(dir, { recursive: true });
  return {
    execArgv: ['--import', './bench/profile-preload.ts'],
    env: { BENCH_PROFILE_DIR: path.resolve(dir), BENCH_PROFILE_ROLE: role },
    ipc: true,
  };
}

/** CPU seconds of each thread of a process, summed by thread name (`node`, `libuv-worker`, V8's workers…). */
function threadCpuSeconds(pid: number): Record<string, number> {
  const byName: Record<string, number> = {};
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = tid === String(pid) ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      byName[name] = (byName[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) / TICKS;
    } catch {
      // the thread ended meanwhile
    }
  }
  return byName;
}

const STATS_SCHEMA = 'bench_stats';

/**
 * Restarts the embedded cluster with pg_stat_statements preloaded (ALTER SYSTEM, kept in the benchmark's
 * own throw-away data directory) and creates the extension in its own schema. Returns the restarted database.
 */
export async function withStatementStats(dataDir: string, database: EmbeddedDatabase): Promise<EmbeddedDatabase> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  await client.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);
  await client.query(`ALTER SYSTEM SET pg_stat_statements.track = 'all'`);
  await client.query(`ALTER SYSTEM SET pg_stat_statements.track_planning = on`);
  await client.end();
  await database.stop();
  const restarted = await startEmbeddedDatabase(dataDir);
  const again = new pg.Client({ connectionString: restarted.url });
  await again.connect();
  await again.query(`CREATE SCHEMA IF NOT EXISTS ${STATS_SCHEMA}`);
  await again.query(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA ${STATS_SCHEMA}`);
  await again.end();
  return restarted;
}

interface Target {
  role: string;
  child: ChildProcess;
}

/** Sends a profiler message to a child and waits for its answer of type `answer`. */
function ask(child: ChildProcess, message: object, answer: string, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no '${answer}' from pid ${child.pid} for ${name}`)), 120_000);
    const onMessage = (m: { benchProfile?: string; name?: string }) => {
      if (m?.benchProfile !== answer || m.name !== name) return;
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve();
    };
    child.on('message', onMessage);
    child.send(message);
  });
}

const DATABASE_COUNTERS = [
  'xact_commit',
  'xact_rollback',
  'tup_returned',
  'tup_fetched',
  'tup_inserted',
  'tup_updated',
  'tup_deleted',
  'blks_read',
  'blks_hit',
] as const;

async function databaseCounters(client: pg.Client): Promise<Record<string, number>> {
  const { rows } = await client.query(`SELECT ${DATABASE_COUNTERS.join(', ')} FROM pg_stat_database WHERE datname = current_database()`);
  return Object.fromEntries(DATABASE_COUNTERS.map((k) => [k, Number(rows[0][k])]));
}

interface Phase {
  /** Profiles one more process from now on (a gateway started within the phase). */
  add(role: string, child: ChildProcess): Promise<void>;
  /** Stops the profiles and writes the phase's files; `operations` is what the phase did (renewals, reconnects). */
  end(operations: number): Promise<void>;
}

const NOTHING: Phase = { add: async () => {}, end: async () => {} };

/**
 * Starts phase `name`: the profiles of `targets`, their thread CPU, and PostgreSQL's statement statistics
 * (reset now). A no-op without a directory.
 */
export async function beginPhase(
  dir: string | undefined,
  name: string,
  targets: Target[],
  postgres: { url: string; postmaster: number },
): Promise<Phase> {
  if (!dir) return NOTHING;
  const started: Array<Target & { threads: Record<string, number> }> = [];
  const add = async (role: string, child: ChildProcess) => {
    await ask(child, { benchProfile: 'start', name }, 'started', name);
    started.push({ role, child, threads: threadCpuSeconds(child.pid!) });
  };
  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  // Counters reach pg_stat_database within a second of each transaction: wait for those of before the phase.
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  const countersBefore = await databaseCounters(client);
  await client.query(`SELECT ${STATS_SCHEMA}.pg_stat_statements_reset()`);
  const pgBefore = treeCpuSeconds(postgres.postmaster);
  const load = [loadavg()[0]!];
  const t0 = performance.now();
  for (const t of targets) await add(t.role, t.child);
  return {
    add,
    end: async (operations: number) => {
      const seconds = (performance.now() - t0) / 1000;
      const processes: Record<string, { threads: Record<string, number>; total: number }> = {};
      for (const t of started) {
        const now = threadCpuSeconds(t.child.pid!);
        const threads = Object.fromEntries(Object.entries(now).map(([k, v]) => [k, Math.round((v - (t.threads[k] ?? 0)) * 100) / 100]));
        processes[t.role] = { threads, total: Math.round(Object.values(threads).reduce((a, b) => a + b, 0) * 100) / 100 };
      }
      const pgCpu = treeCpuSeconds(postgres.postmaster) - pgBefore;
      for (const t of started) await ask(t.child, { benchProfile: 'stop', name }, 'written', name);
      const { rows } = await client.query(
        `SELECT query, toplevel, calls, total_exec_time, total_plan_time, rows, wal_records, wal_bytes
           FROM ${STATS_SCHEMA}.pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND query NOT LIKE '%pg_stat_%'
          ORDER BY total_exec_time + total_plan_time DESC`,
      );
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const countersAfter = await databaseCounters(client);
      await client.end();
      load.push(loadavg()[0]!);
      const statements = rows.map((r) => ({
        query: String(r.query).replace(/\s+/g, ' ').slice(0, 400),
        // false: run inside another statement (a SQL function's body, a foreign-key check), not sent by a client.
        toplevel: r.toplevel !== false,
        calls: Number(r.calls),
        execMs: Math.round(Number(r.total_exec_time) * 100) / 100,
        planMs: Math.round(Number(r.total_plan_time) * 100) / 100,
        rows: Number(r.rows),
        walRecords: Number(r.wal_records),
        walBytes: Number(r.wal_bytes),
      }));
      const database = Object.fromEntries(DATABASE_COUNTERS.map((k) => [k, countersAfter[k]! - countersBefore[k]!]));
      const record = {
        name,
        operations,
        seconds: Math.round(seconds * 10) / 10,
        loadAverage: load.map((n) => Math.round(n * 10) / 10),
        processes,
        postgres: { cpuSeconds: Math.round(pgCpu * 100) / 100, database, statements },
      };
      await writeFile(path.join(dir, `${name}.json`), JSON.stringify(record, null, 2));
      process.stderr.write(`profile ${name}: ${operations} operations, files in ${dir}\n`);
    },
  };
}

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { reservePort } from '../gateway-process';
import { chownTree, runAs } from './ha-postgres';

/** PostgreSQL 15's programs (Debian's postgresql-15), as the failover drill reads them. */
const PG_BIN = process.env.BETTER_COMPUTE_PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface PgCluster {
  /** The superuser's URL of the `postgres` database. */
  url: string;
  /** The URL of database `name` on this cluster. */
  urlOf(name: string): string;
  /** Creates the empty database `name`. */
  createDatabase(name: string): Promise<void>;
  /** Runs one of PostgreSQL's programs (pg_dump, pg_restore, …) as the cluster's owner; rejects on failure. */
  run(program: string, args: string[]): Promise<void>;
  /** The cluster's temporary directory (its owner can write there: dump files go here). */
  root: string;
  /** Kills the postmaster and every backend (SIGKILL, as a lost host) and removes the directory. */
  stop(): Promise<void>;
}

/**
 * A plain PostgreSQL 15 cluster of its own under a temporary directory, on a free loopback port (initdb, then
 * the postmaster; trust authentication on 127.0.0.1 only). As root, it runs as the `postgres` user.
 */
export async function startPgCluster(): Promise<PgCluster> {
  if (!existsSync(path.join(PG_BIN, 'pg_dump')))
    throw new Error(`no PostgreSQL 15 in ${PG_BIN}: apt-get install postgresql-15, or set BETTER_COMPUTE_PG_BIN to another bin directory`);
  const as = runAs();
  const root = mkdtempSync(path.join(tmpdir(), 'bc-pg-'));
  chownTree(root, as);
  const dataDir = path.join(root, 'data');
  // Not spawnSync: the callers keep serving load in this process while pg_dump runs.
  const run = (program: string, args: string[]) =>
    new Promise<void>((resolve, reject) => {
      const child = spawn(path.join(PG_BIN, program), args, {
        cwd: root,
        ...as,
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, LANG: 'C.UTF-8' },
      });
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => void (stderr += chunk.toString('utf8')));
      child.once('error', reject);
      child.once('exit', (code, signal) =>
        code === 0 ? resolve() : reject(new Error(`${program} failed (${code ?? signal}): ${stderr}`)),
      );
    });
  await run('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-sync']);
  const port = await reservePort();
  const log: string[] = [];
  const child = spawn(
    path.join(PG_BIN, 'postgres'),
    ['-D', dataDir, '-p', String(port), '-k', root, '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    { cwd: root, ...as, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const keep = (chunk: Buffer) => log.push(...chunk.toString('utf8').split('\n').filter(Boolean));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    await exited;
    rmSync(root, { recursive: true, force: true });
  };
  const urlOf = (name: string) => `postgresql://postgres@127.0.0.1:${port}/${name}`;
  for (const start = Date.now(); ; await new Promise((r) => setTimeout(r, 200))) {
    const client = new pg.Client({ connectionString: urlOf('postgres'), connectionTimeoutMillis: 2_000 });
    client.on('error', () => {});
    const up = await client.connect().then(
      () => true,
      () => false,
    );
    await client.end().catch(() => {});
    if (up) break;
    if (Date.now() - start > 30_000 || child.exitCode !== null) {
      await stop();
      throw new Error(`PostgreSQL did not start within 30 s:\n${log.slice(-20).join('\n')}`);
    }
  }
  const createDatabase = async (name: string) => {
    const admin = new pg.Client({ connectionString: urlOf('postgres') });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${name}"`).finally(() => admin.end());
  };
  return { url: urlOf('postgres'), urlOf, createDatabase, run, root, stop };
}

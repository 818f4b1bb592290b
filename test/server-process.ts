import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { JoinTrust } from '../agent/join';
import { bootstrapFirstStart } from '../server/boot/bootstrap';
import { createDb, type Db } from '../server/db/client';
import { joinCryptoFromBundle } from '../server/pki/issuance/join-crypto';
import { loadPki } from '../server/pki/bundle/store';
import { getRootTenant } from '../server/tenants/tenants';
import { createMigratedDatabase, dropDatabase } from './db';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const READY = /^listening on (http:\/\/\S+)/;
const START_TIMEOUT_MS = 60_000;

/** A BETTER_COMPUTE_SECRET of 256 random bits (43 base64url characters). */
export const newServerSecret = () => randomBytes(32).toString('base64url');

export interface ServerProcess {
  url: string;
  port: number;
  child: ChildProcess;
  /** Every line the server wrote to stderr (its log), in order. */
  log: string[];
  /** Every line the server wrote to stdout (what the start says: migrations, re-seals, warnings), in order. */
  output: string[];
  /** Resolves when the process has exited. */
  exited: Promise<void>;
  /** SIGKILL (or `signal`), and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

const running = new Set<ChildProcess>();
// A test file that fails or times out must not leave servers running after its worker exits.
process.once('exit', () => running.forEach((child) => child.kill('SIGKILL')));

/**
 * Starts test/server-main.ts (the production start and boot server, the console's routes mounted without
 * Next) on `databaseUrl` (else on its embedded PostgreSQL under the env's BETTER_COMPUTE_DATA_DIR) and
 * resolves once it listens. `port` 0 takes a free one; a restart passes the previous port so clients keep
 * their URL. No gateway process is started (BETTER_COMPUTE_GATEWAY_PORT=0 unless `env` says otherwise): the
 * tests that need one start their own.
 */
export function startServerProcess(options: {
  databaseUrl?: string;
  secret: string;
  port?: number;
  env?: Record<string, string>;
  /** Another tree to run test/server-main.ts from (the rolling-upgrade drill's previous release). */
  root?: string;
}): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/server-main.ts'], {
    cwd: options.root ?? ROOT,
    env: {
      ...process.env,
      // None: the server starts its embedded PostgreSQL under BETTER_COMPUTE_DATA_DIR, as npm start does.
      DATABASE_URL: options.databaseUrl ?? '',
      BETTER_COMPUTE_SECRET: options.secret,
      PORT: String(options.port ?? 0),
      NODE_NO_WARNINGS: '1',
      BETTER_COMPUTE_GATEWAY_PORT: '0',
      // The start keeps a generated console secret in the data directory; a test server gets its own.
      NEXTAUTH_SECRET: process.env.NEXTAUTH_SECRET || randomBytes(32).toString('base64url'),
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const log: string[] = [];
  const output: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => log.push(line));
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child);
      resolve();
    }),
  );
  const stop = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`the server did not start within ${START_TIMEOUT_MS / 1000} s; its log:\n${log.join('\n')}`));
    }, START_TIMEOUT_MS);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output.push(line);
      const ready = READY.exec(line);
      if (!ready) return;
      clearTimeout(timer);
      const url = ready[1]!;
      resolve({ url, port: Number(new URL(url).port), child, log, output, exited, stop });
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the server exited before it listened; its log:\n${log.join('\n')}`));
    });
  });
}

export interface ServerDatabase {
  url: string;
  db: Db;
  close(): Promise<void>;
}

/**
 * A migrated database of its own on the test cluster, for servers that bootstrap it (root tenant, PKI,
 * first admin: singletons the shared database must not get) and for tests that count every row.
 */
export async function createServerDatabase(label: string): Promise<ServerDatabase> {
  const name = `${label}_${randomBytes(4).toString('hex')}`;
  const url = await createMigratedDatabase(name);
  const db = createDb(url, { max: 4 });
  return {
    url,
    db,
    close: async () => {
      await db.$disconnect();
      await dropDatabase(name);
    },
  };
}

/**
 * A database of its own (`label`) served by `count` server processes (default 1) with `env`, and what an agent
 * pins for them. The servers start one after another, the first bootstrapping the database; with `trustDomain`
 * the first start's work is done here and they start together, as the operator guide asks of instances sharing
 * one database. `server` is the first. What was started is stopped again if a later step fails.
 */
export async function startServedDatabase(
  label: string,
  secret: string,
  options: { count?: number; trustDomain?: string; env?: Record<string, string> } = {},
) {
  const database = await createServerDatabase(label);
  const servers: ServerProcess[] = [];
  const start = () => startServerProcess({ databaseUrl: database.url, secret, env: options.env });
  try {
    const count = options.count ?? 1;
    if (options.trustDomain) {
      await bootstrapFirstStart(database.db, { secret, trustDomain: options.trustDomain });
      servers.push(...(await Promise.all(Array.from({ length: count }, start))));
    } else {
      for (let i = 0; i < count; i++) servers.push(await start());
    }
    return { database, servers, server: servers[0]!, trust: await serverTrust(database.db, secret) };
  } catch (error) {
    await Promise.all(servers.map((server) => server.stop()));
    await database.close();
    throw error;
  }
}

/** What an agent pins for the server that bootstrapped `db`: its JoinService keys, from the stored PKI. */
export async function serverTrust(db: Db, secret: string): Promise<JoinTrust> {
  const crypto = joinCryptoFromBundle(await loadPki(db, secret));
  return {
    encryptionJwk: crypto.encryptionPublicJwk,
    signingCertificateDer: Buffer.from(crypto.signingCertificate, 'base64'),
    signingKeyPin: crypto.signingKeyPin,
  };
}

/** The root tenant and the default site and pool that the server's first start created. */
export async function defaultPool(db: Db) {
  const root = await getRootTenant(db);
  if (!root) throw new Error('the server has not bootstrapped this database');
  return db.pool.findFirstOrThrow({ where: { ownerTenantId: root.id, name: 'default' } });
}

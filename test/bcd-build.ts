import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { outputOf } from './child-output';
import { reservePort, startTestGateway } from './gateway-process';
import { createServerDatabase, startServerProcess, type ServerDatabase, type ServerProcess } from './server-process';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface BcdBuild {
  dir: string;
  version: string;
  binary: string;
  sha256: string;
}

/**
 * Builds bcd with scripts/build-bcd.mjs into `.cache/bcd-test/<pid>` (amd64 only). build-bcd reuses its
 * content-hashed cache, so only the first run after an agent change pays for esbuild, the blob and postject.
 */
export async function buildBcdForTests(): Promise<BcdBuild> {
  const dir = path.join(ROOT, '.cache/bcd-test', String(process.pid));
  mkdirSync(dir, { recursive: true });
  await promisify(execFile)(process.execPath, ['scripts/build-bcd.mjs', '--quiet', '--no-arm64', '--out', dir], {
    cwd: ROOT,
    maxBuffer: 1 << 24,
  });
  const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const sums = readFileSync(path.join(dir, version, 'SHA256SUMS'), 'utf8');
  const sha256 = /^([0-9a-f]{64}) {2}linux-amd64$/m.exec(sums)![1]!;
  return { dir, version, binary: path.join(dir, version, 'linux-amd64'), sha256 };
}

export interface BcdServer {
  bcd: BcdBuild;
  database: ServerDatabase;
  server: ServerProcess;
  /** The gateway URL the well-known document names. */
  gatewayUrl: string;
  /** Stops the gateway and the server, drops the database and removes the build. */
  stop(): Promise<void>;
}

/**
 * What the bcd flow tests run against: bcd built ({@link buildBcdForTests}), the production server
 * (test/server-main.ts) on a database of its own (`label`) serving that build's downloads, and a real gateway
 * process in front of it (test/gateway-process.ts) unless `gateway` is false; the well-known document then
 * names a gateway URL where nothing listens (bcd's bootstrap needs one). `env` adds to the server's
 * environment. What was started is stopped again if a later step fails.
 */
export async function startBcdServer(
  label: string,
  secret: string,
  options: { env?: Record<string, string>; gateway?: boolean } = {},
): Promise<BcdServer> {
  const gatewayPort = options.gateway === false ? 9 : await reservePort();
  const gatewayUrl = `https://127.0.0.1:${gatewayPort}`;
  const [bcd, database] = await Promise.all([buildBcdForTests(), createServerDatabase(label)]);
  let server: ServerProcess | undefined;
  let gateway: { stop(): Promise<void> } | undefined;
  const stop = async () => {
    await gateway?.stop();
    await server?.stop();
    await database.close();
    rmSync(bcd.dir, { recursive: true, force: true });
    removeMachineRoots();
  };
  try {
    server = await startServerProcess({
      databaseUrl: database.url,
      secret,
      env: { BETTER_COMPUTE_DOWNLOADS_DIR: bcd.dir, BETTER_COMPUTE_GATEWAY_URL: gatewayUrl, ...options.env },
    });
    if (options.gateway !== false) {
      gateway = await startTestGateway({ db: database.db, secret, port: gatewayPort, apiUrl: server.url });
    }
    return { bcd, database, server, gatewayUrl, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command with exactly `env` (no inherited environment) and `input` on standard input. */
export async function run(
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; input?: string; cwd?: string },
): Promise<Run> {
  const child = spawn(command, args, { env: options.env, cwd: options.cwd });
  const output = outputOf(child);
  child.stdin.on('error', () => {}); // a script that refuses before reading closes its stdin early
  child.stdin.end(options.input ?? '');
  return output;
}

const machineRoots = new Set<string>();
// A machine holds an installed bcd (over 100 MB): the roots a test file made go when its server stops, or at
// the latest when its worker exits, failed or not.
process.once('exit', () => removeMachineRoots());

/** Removes every machine root {@link newMachineRoot} made in this process (a bcd server's stop does it too). */
export function removeMachineRoots(): void {
  for (const root of machineRoots) rmSync(root, { recursive: true, force: true });
  machineRoots.clear();
}

/** A machine: a directory that bcd and the install script treat as `/` (BCD_ROOT), with its own DMI product UUID and serial. */
export function newMachineRoot(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'bcd-root-'));
  machineRoots.add(root);
  mkdirSync(path.join(root, 'sys/class/dmi/id'), { recursive: true });
  writeFileSync(path.join(root, 'sys/class/dmi/id/product_uuid'), `${randomUUID()}\n`);
  writeFileSync(path.join(root, 'sys/class/dmi/id/product_serial'), `SN-${randomUUID().slice(0, 8)}\n`);
  return root;
}

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newMachineRoot, run } from '../test/bcd-build';
import { reservePort } from '../test/gateway-process';
import { defaultPool, newServerSecret } from '../test/server-process';
import { createDb, type Db } from '../server/db/client';
import { runningEmbeddedDatabaseUrl } from '../server/db/embedded';
import { principalOf } from '../server/authz/principal';
import { createJoinToken } from '../server/tokens/join-tokens';
import { generateInstallScript } from '../server/daemon/generate';

// The release end to end: `npm pack` (prepack builds what is missing), the tarball installed into an empty
// prefix, `<prefix>/bin/better-compute serve` from an unrelated directory on free ports with a temporary data
// directory (its own embedded PostgreSQL), a machine joined through its gateway with the bcd the release
// ships (downloaded from the server by the install script), then a clean stop. The systemd units it ships
// pass `systemd-analyze verify` with the installed command.

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const exec = promisify(execFile);
const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
const scratch = mkdtempSync(path.join(tmpdir(), 'bc-release-'));
chmodSync(scratch, 0o711); // as root, the embedded PostgreSQL runs as postgres, which must enter it
const prefix = path.join(scratch, 'prefix');
const dataDir = path.join(scratch, 'data');
const secret = newServerSecret();
let tarball: string;
let installed: string;
let server: ChildProcess | undefined;
let exited: Promise<number | null>;
let output = '';
let port: number;
let gatewayPort: number;
let db: Db | undefined;

/** Resolves once `server` prints `text`; rejects if it exits first or `ms` pass. */
function untilPrinted(text: string, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "${text}" within ${ms} ms:\n${output}`)), ms);
    const check = () => {
      if (!output.includes(text)) return;
      clearTimeout(timer);
      resolve();
    };
    server!.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`better-compute serve exited (${code}) before "${text}":\n${output}`));
    });
    check();
  });
}

beforeAll(async () => {
  const packDir = path.join(scratch, 'pack');
  await exec('mkdir', ['-p', packDir, prefix]);
  await exec('npm', ['pack', '--silent', '--pack-destination', packDir], { cwd: ROOT, maxBuffer: 1 << 26 });
  tarball = path.join(packDir, `better-compute-${version}.tgz`);
  process.stdout.write(`release tarball: ${(statSync(tarball).size / 1e6).toFixed(1)} MB\n`);
  // Only the npm registry (or npm's cache) is reached: the build is in the tarball.
  await exec('npm', ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', '--prefer-offline', tarball], {
    cwd: scratch,
    maxBuffer: 1 << 26,
  });
  installed = path.join(prefix, 'lib/node_modules/better-compute');
  [port, gatewayPort] = [await reservePort(), await reservePort()];
  const cwd = mkdtempSync(path.join(scratch, 'cwd-'));
  const child = spawn(path.join(prefix, 'bin/better-compute'), ['serve'], {
    cwd,
    env: {
      PATH: process.env.PATH,
      HOME: scratch,
      BETTER_COMPUTE_DATA_DIR: dataDir,
      BETTER_COMPUTE_SECRET: secret,
      PORT: String(port),
      BETTER_COMPUTE_GATEWAY_PORT: String(gatewayPort),
      BETTER_COMPUTE_SESSION_START_JITTER_SECONDS: '0',
    } as unknown as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server = child;
  exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  await untilPrinted('Better Compute is running', 240_000);
  await untilPrinted('Gateway listening', 60_000);
}, 900_000);

afterAll(async () => {
  await db?.$disconnect();
  if (server && server.exitCode === null) {
    server.kill('SIGKILL');
    await exited;
  }
  rmSync(scratch, { recursive: true, force: true });
}, 60_000);

describe('the release', () => {
  it('ships the builds, the migrations, the bcd executables and the units, and no sources or tests', async () => {
    const { stdout } = await exec('tar', ['-tzf', tarball], { maxBuffer: 1 << 26 });
    const files = stdout.split('\n').filter(Boolean);
    for (const file of [
      'package/bin/better-compute.mjs',
      'package/scripts/runtime.mjs',
      'package/.build/server/main.mjs',
      'package/.build/server/cli.mjs',
      'package/.build/server/gateway.mjs',
      'package/.next/BUILD_ID',
      `package/dist/bcd/${version}/linux-amd64`,
      `package/dist/bcd/${version}/SHA256SUMS`,
      'package/prisma/migrations/migration_lock.toml',
      'package/deploy/systemd/better-compute.service',
      'package/deploy/systemd/better-compute-gateway.service',
    ])
      expect(files).toContain(file);
    expect(files.filter((f) => /\.test\.ts$|^package\/(server|cli|agent|app|test|e2e)\/|^package\/\.next\/cache\//.test(f))).toEqual([]);
    expect(JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8'))).not.toHaveProperty('private');
  });

  it('serves the console and the API from the installed prefix', async () => {
    const api = await fetch(`http://127.0.0.1:${port}/api/compute/openapi.json`);
    expect(api.status).toBe(200);
    expect(((await api.json()) as { info: { version: string } }).info.version).toBe(version);
    const console = await fetch(`http://127.0.0.1:${port}/`, { redirect: 'manual' });
    expect([200, 307]).toContain(console.status);
    // The console's build, with its server-external packages found from the installed prefix.
    const signIn = await fetch(`http://127.0.0.1:${port}/login`);
    expect(signIn.status).toBe(200);
    // The data directory is the one given, never inside the install prefix.
    expect(output).toContain(`Starting the embedded PostgreSQL under ${dataDir}/postgres`);
    expect(readdirSync(installed)).not.toContain('.data');
  });

  it('joins a machine through its gateway with the bcd it ships', { timeout: 240_000 }, async () => {
    const url = runningEmbeddedDatabaseUrl(dataDir);
    expect(url).not.toBeNull();
    db = createDb(url!, { max: 2 });
    process.env.BETTER_COMPUTE_SECRET = secret; // generateInstallScript opens the PKI like the server does
    const pool = await defaultPool(db);
    const admin = principalOf('local', 'release-test', [[pool.ownerTenantId, 'admin']]);
    const { token } = await createJoinToken(db, admin, {
      tenantId: pool.ownerTenantId,
      poolId: pool.id,
      ttlSeconds: 3600,
      idempotencyKey: 'release-test',
      maxUses: 1,
      allowReclaim: false,
    });
    const sums = readFileSync(path.join(installed, 'dist/bcd', version, 'SHA256SUMS'), 'utf8');
    const amd64 = /^([0-9a-f]{64}) {2}linux-amd64$/m.exec(sums)![1]!;
    const { script } = await generateInstallScript(
      db,
      admin,
      {
        tenantId: pool.ownerTenantId,
        poolId: pool.id,
        gatewayUrl: `https://127.0.0.1:${gatewayPort}`,
        baseUrl: `http://127.0.0.1:${port}`,
        bcdVersion: version,
        sha256: { amd64 },
      },
      path.join(installed, 'dist/bcd'),
    );
    const scriptFile = path.join(scratch, 'install-bcd.sh');
    writeFileSync(scriptFile, script);
    const machine = newMachineRoot();
    try {
      const result = await run('sh', [scriptFile], {
        env: { PATH: '/usr/bin:/bin', BCD_ROOT: machine } as unknown as NodeJS.ProcessEnv,
        input: `${token}\n`,
      });
      expect(result.code, result.stderr).toBe(0);
      const { nodeId } = JSON.parse(readFileSync(path.join(machine, 'var/lib/bcd/identity.json'), 'utf8')) as { nodeId: string };
      const node = await db.node.findUniqueOrThrow({ where: { id: nodeId } });
      expect(node).toMatchObject({ poolId: pool.id, state: 'adopted' });
    } finally {
      rmSync(machine, { recursive: true, force: true });
    }
  });

  it('ships systemd units that systemd-analyze verifies against the installed command', async () => {
    for (const unit of ['better-compute.service', 'better-compute-gateway.service']) {
      const text = readFileSync(path.join(installed, 'deploy/systemd', unit), 'utf8');
      for (const line of ['NoNewPrivileges=yes', 'ProtectSystem=strict', 'DynamicUser=yes', 'CapabilityBoundingSet=', 'PrivateTmp=yes'])
        expect(text).toContain(line);
      const dir = mkdtempSync(path.join(scratch, 'units-'));
      writeFileSync(path.join(dir, unit), text.replaceAll('/usr/local/bin/better-compute', path.join(prefix, 'bin/better-compute')));
      const result = await run('systemd-analyze', ['verify', path.join(dir, unit)], { env: process.env });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toBe('');
    }
  });

  it('stops cleanly on SIGTERM, the embedded PostgreSQL with it', { timeout: 90_000 }, async () => {
    await db?.$disconnect();
    db = undefined;
    server!.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(runningEmbeddedDatabaseUrl(dataDir)).toBeNull();
  });
});

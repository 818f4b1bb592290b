import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newMachineRoot as newRoot, run, startBcdServer, type BcdBuild, type BcdServer } from '../../test/bcd-build';
import { defaultPool, newServerSecret, type ServerDatabase, type ServerProcess } from '../../test/server-process';
import { principalOf, type Principal } from '../authz/principal';
import { createCaller } from '../api/root';
import { createPool } from '../pools/pools';
import { createJoinToken } from '../tokens/join-tokens';
import { generateInstallScript } from './generate';

// Adopting a brownfield server end to end (joining.md "Adopting a brownfield server", "Watch it join"): the
// production server (test/server-main.ts), a real gateway process started as `npm start` starts it, the
// generated install script installing the real built bcd under a BCD_ROOT prefix, then `bcd node` renewing
// through the gateway with no Node.js on PATH.

const secret = newServerSecret();
const NO_NODE = '/nonexistent';
let database: ServerDatabase;
let server: ServerProcess;
let gatewayUrl: string;
let bcd: BcdBuild;
let started: BcdServer | undefined;
let admin: Principal;
let tenantId: string;
let checkedPoolId: string;
let script: string;
let tokens = 0;
const dataDir = mkdtempSync(path.join(tmpdir(), 'bc-adopt-'));

// bcd opens its first session at once here (it waits up to 5 s by default).
const env = (root: string, PATH = '/usr/bin:/bin') =>
  ({ PATH, BCD_ROOT: root, BETTER_COMPUTE_SESSION_START_JITTER_SECONDS: '0' }) as unknown as NodeJS.ProcessEnv;
const bcdOf = (root: string) => path.join(root, 'usr/local/bin/bcd');
const nodeIdOf = (root: string) => JSON.parse(readFileSync(path.join(root, 'var/lib/bcd/identity.json'), 'utf8')).nodeId as string;
/** The tRPC procedures as the console calls them (nodes.list, nodes.adopt, nodes.revokeIdentity). */
const api = () => createCaller({ db: database.db, principal: admin });
const newToken = async (poolId: string) =>
  (
    await createJoinToken(database.db, admin, {
      tenantId,
      poolId,
      ttlSeconds: 3600,
      idempotencyKey: `adopt-flow-${++tokens}`,
      maxUses: 1,
      allowReclaim: false,
    })
  ).token!;

/** Installs bcd on a new machine with the generated script and a token of `poolId`; answers the prefix root. */
async function installedMachine(poolId = checkedPoolId) {
  const root = newRoot();
  const result = await run('sh', [script], { env: env(root), input: `${await newToken(poolId)}\n` });
  expect(result.code, result.stderr).toBe(0);
  return root;
}

async function lifecycleOf(nodeId: string) {
  const events = await database.db.event.findMany({ where: { tenantId, type: { startsWith: 'node.' } }, orderBy: { id: 'asc' } });
  return events.filter((e) => (e.data as { nodeId?: string }).nodeId === nodeId).map((e) => e.type);
}

beforeAll(async () => {
  started = await startBcdServer('adopt_flow', secret);
  ({ bcd, database, server, gatewayUrl } = started);
  process.env.BETTER_COMPUTE_SECRET = secret; // generateInstallScript reads the PKI like the server does
  const pool = await defaultPool(database.db);
  tenantId = pool.ownerTenantId;
  admin = principalOf('local', 'adopt-flow-test', [[tenantId, 'admin']]);
  checkedPoolId = (
    await createPool(database.db, admin, {
      tenantId,
      siteId: pool.siteId,
      name: 'gpu-checked',
      agent: 'bcd',
      acceptanceChecks: ['gpu-burn'],
    })
  ).id;
  const generated = await generateInstallScript(
    database.db,
    admin,
    { tenantId, poolId: checkedPoolId, gatewayUrl, baseUrl: server.url, bcdVersion: bcd.version, sha256: { amd64: bcd.sha256 } },
    bcd.dir,
  );
  script = path.join(dataDir, 'install-bcd.sh');
  writeFileSync(script, generated.script);
}, 300_000);

afterAll(async () => {
  await started?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('a brownfield server joins a pool with acceptance checks and renews through the gateway', () => {
  it(
    'is adopting after the script, connected at the first bcd node renewal, adopted through nodes.adopt',
    { timeout: 180_000 },
    async () => {
      const root = await installedMachine();
      const nodeId = nodeIdOf(root);
      const listed = await api().nodes.list({ tenantId, poolId: checkedPoolId });
      expect(listed.items.map((n) => [n.id, n.state])).toEqual([[nodeId, 'adopting']]);
      expect(await lifecycleOf(nodeId)).toEqual(['node.joined']);

      const doctor = await run(bcdOf(root), ['doctor'], { env: env(root, NO_NODE) });
      expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
      expect(doctor.stdout).toMatch(new RegExp(`ok +gateway +${gatewayUrl.replace(/\./g, '\\.')}`));

      const before = readFileSync(path.join(root, 'var/lib/bcd/identity.json'), 'utf8');
      const renewed = await run(bcdOf(root), ['node', '--once'], { env: env(root, NO_NODE) });
      expect(renewed.code, renewed.stdout + renewed.stderr).toBe(0);
      expect(renewed.stdout).toContain(`renewed spiffe://`);
      expect(readFileSync(path.join(root, 'var/lib/bcd/identity.json'), 'utf8')).not.toBe(before);
      expect(await database.db.nodeCert.count({ where: { nodeId } })).toBe(2);
      expect(await lifecycleOf(nodeId)).toEqual(['node.joined', 'node.connected', 'node.acceptance.started']);
      expect((await api().nodes.list({ tenantId, poolId: checkedPoolId })).items[0]!.state).toBe('adopting');

      // A second contact of the same identity publishes nothing new.
      expect((await run(bcdOf(root), ['node', '--once'], { env: env(root, NO_NODE) })).code).toBe(0);
      await api().nodes.adopt({ tenantId, nodeId });
      expect(await lifecycleOf(nodeId)).toEqual(['node.joined', 'node.connected', 'node.acceptance.started', 'node.adopted']);
      expect((await api().nodes.list({ tenantId, poolId: checkedPoolId })).items[0]!.state).toBe('adopted');
    },
  );
});

describe('bcd node', () => {
  it('stops with exit 0 on SIGTERM while it waits to renew', { timeout: 120_000 }, async () => {
    const root = await installedMachine();
    const child = spawn(bcdOf(root), ['node'], { env: env(root, NO_NODE) });
    let stdout = '';
    const waiting = new Promise<void>((resolve) =>
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (/renewing in \d+ s/.test(stdout)) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await waiting;
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('exits non-zero with a revoked identity and names bcd join --reset --yes', { timeout: 120_000 }, async () => {
    const root = await installedMachine();
    const nodeId = nodeIdOf(root);
    await api().nodes.revokeIdentity({ tenantId, nodeId });
    const result = await run(bcdOf(root), ['node', '--once'], { env: env(root, NO_NODE) });
    expect(result.code).toBe(3);
    expect(result.stdout + result.stderr).toMatch(/refused to renew .* 3 times .*bcd join --reset --yes/);
    // A refused renewal is no contact.
    expect(await lifecycleOf(nodeId)).toEqual(['node.joined', 'node.identity-revoked']);
  });
});

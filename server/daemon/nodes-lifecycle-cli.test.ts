import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TpmClient } from '../../agent/tpm/client';
import { createEndorsementKey } from '../../agent/tpm/endorsement';
import { ekHashOf } from '../../agent/tpm/identify';
import { parseTpmAddress } from '../../agent/tpm/transport';
import { newMachineRoot, run, startBcdServer, type BcdBuild, type BcdServer } from '../../test/bcd-build';
import { runCli } from '../../test/cli';
import { defaultPool, newServerSecret, type ServerDatabase, type ServerProcess } from '../../test/server-process';
import { startSwtpm, type Swtpm } from '../../test/swtpm';
import { createEkRoot, issueEkCertificate, writeEkCertificate } from '../../test/tpm-provision';
import { insertApiKey } from '../api-keys/api-keys';
import { principalOf, type Principal } from '../authz/principal';
import { parseTpmPublic, spkiOf } from '../../protocol/tpm/public-area';
import { createPool } from '../pools/pools';
import { createJoinToken } from '../tokens/join-tokens';
import { generateInstallScript } from './generate';

// The node lifecycle from the CLI end to end: every `better-compute nodes …` call is the real CLI as a process
// (bin/better-compute.mjs) with an API key against the production server (test/server-main.ts) and a real gateway;
// the machines are the built bcd, installed by the generated script under a BCD_ROOT prefix, or joined with
// `--attestor tpm` on swtpm. Covers joining.md's runbooks "TPM replaced" and "The node joined but stays adopting".

const secret = newServerSecret();
const NO_NODE = '/nonexistent';
let database: ServerDatabase;
let server: ServerProcess;
let gatewayUrl: string;
let bcd: BcdBuild;
let started: BcdServer | undefined;
let admin: Principal;
let tenantId: string;
let siteId: string;
let poolId: string;
let apiKeyId: string;
let cliEnv: Record<string, string>;
let pins: { servingCaPin: string; joinSigningPin: string; joinEncryptionPin: string };
const scripts = new Map<string, string>();
let tokens = 0;
const vendor = createEkRoot('CN=Lifecycle Test TPM Vendor,O=Better Compute Tests');
const workDir = mkdtempSync(path.join(tmpdir(), 'bc-lifecycle-'));
const tpms: Swtpm[] = [];

beforeAll(async () => {
  writeFileSync(path.join(workDir, 'vendor.pem'), (await vendor).pem);
  started = await startBcdServer('nodes_lifecycle_cli', secret, { env: { BETTER_COMPUTE_TPM_EK_ROOTS: workDir } });
  ({ bcd, database, server, gatewayUrl } = started);
  process.env.BETTER_COMPUTE_SECRET = secret; // generateInstallScript reads the PKI like the server does
  const pool = await defaultPool(database.db);
  ({ ownerTenantId: tenantId, siteId, id: poolId } = pool);
  admin = principalOf('local', 'nodes-lifecycle-cli-test', [[tenantId, 'admin']]);
  const created = await insertApiKey(database.db, { tenantId, role: 'operator', name: 'lifecycle-cli' }, 'test');
  apiKeyId = created.id;
  cliEnv = { BETTER_COMPUTE_URL: server.url, BETTER_COMPUTE_API_KEY: created.key };
  const doc = (await (await fetch(`${server.url}/api/compute/.well-known/better-compute`)).json()) as {
    gateway: { servingCaPin: string };
    join: { signingKeyPin: string; encryptionKeyPin: string };
  };
  pins = { servingCaPin: doc.gateway.servingCaPin, joinSigningPin: doc.join.signingKeyPin, joinEncryptionPin: doc.join.encryptionKeyPin };
}, 300_000);

afterAll(async () => {
  for (const tpm of tpms) await tpm.stop();
  await started?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

const cli = (...args: string[]) => runCli(args, cliEnv);
const nodesCli = async (verb: string, nodeId: string, ...extra: string[]) => {
  const result = await cli('nodes', verb, nodeId, '--tenant', tenantId, ...extra);
  return { ...result, json: () => JSON.parse(result.stdout) as Record<string, unknown> };
};
const env = (root: string, extra: Record<string, string> = {}) =>
  ({ PATH: '/usr/bin:/bin', BCD_ROOT: root, BETTER_COMPUTE_SESSION_START_JITTER_SECONDS: '0', ...extra }) as unknown as NodeJS.ProcessEnv;
const dataDir = (root: string) => path.join(root, 'var/lib/bcd');
const nodeIdOf = (root: string) =>
  (JSON.parse(readFileSync(path.join(dataDir(root), 'identity.json'), 'utf8')) as { nodeId: string }).nodeId;
const tokenOf = async (pool: string, allowReclaim = false) =>
  (
    await createJoinToken(database.db, admin, {
      tenantId,
      poolId: pool,
      ttlSeconds: 3600,
      idempotencyKey: `lifecycle-cli-${++tokens}`,
      maxUses: 1,
      allowReclaim,
    })
  ).token!;

/** The generated install script of `pool`, written once. */
async function scriptOf(pool: string): Promise<string> {
  const known = scripts.get(pool);
  if (known) return known;
  const { script } = await generateInstallScript(
    database.db,
    admin,
    { tenantId, poolId: pool, gatewayUrl, baseUrl: server.url, bcdVersion: bcd.version, sha256: { amd64: bcd.sha256 } },
    bcd.dir,
  );
  const file = path.join(workDir, `install-${pool}.sh`);
  writeFileSync(file, script);
  scripts.set(pool, file);
  return file;
}

/** A new machine the install script joined to `pool` with a token; answers its root and node id. */
async function installedMachine(pool = poolId): Promise<{ root: string; nodeId: string }> {
  const root = newMachineRoot();
  const result = await run('sh', [await scriptOf(pool)], { env: env(root), input: `${await tokenOf(pool)}\n` });
  expect(result.code, result.stderr).toBe(0);
  return { root, nodeId: nodeIdOf(root) };
}

/** The node's events of `types` (prefixes), oldest first, as [type, data]. */
async function eventsOf(nodeId: string, prefix = 'node.') {
  const events = await database.db.event.findMany({ where: { tenantId, type: { startsWith: prefix } }, orderBy: { id: 'asc' } });
  return events.filter((e) => (e.data as { nodeId?: string }).nodeId === nodeId).map((e) => [e.type, e.data] as const);
}
const eventTypes = async (nodeId: string) => (await eventsOf(nodeId)).map(([type]) => type);
const auditOf = async (nodeId: string) =>
  (await database.db.auditEntry.findMany({ where: { tenantId, resource: { endsWith: nodeId } }, orderBy: { id: 'asc' } })).map((a) => [
    a.action,
    a.actor,
  ]);
const actor = () => `api-key:${apiKeyId}`;

/** A software TPM with a fresh EK whose certificate chains to the vendor root the server trusts. */
async function vendorTpm(): Promise<{ tpm: Swtpm; ekHash: string }> {
  const tpm = await startSwtpm();
  tpms.push(tpm);
  const client = await TpmClient.open(parseTpmAddress(tpm.address));
  try {
    const ek = await createEndorsementKey(client, 'ecc');
    await client.flush(ek.handle);
    await writeEkCertificate(client, 'ecc', await issueEkCertificate(await vendor, spkiOf(parseTpmPublic(ek.publicArea, 'EK')), 'ecc'));
    return { tpm, ekHash: ekHashOf(ek.publicArea) };
  } finally {
    await client.close();
  }
}

describe('better-compute nodes cordon | uncordon | revoke-identity | delete --yes, each a process', () => {
  it(
    'changes the node as each verb says, with its audit entry and event, and refuses what the lifecycle forbids',
    { timeout: 240_000 },
    async () => {
      const { root, nodeId } = await installedMachine();
      expect(await database.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ state: 'adopted', cordoned: false });

      const cordoned = await nodesCli('cordon', nodeId, '--json');
      expect(cordoned.code, cordoned.stderr).toBe(0);
      expect(cordoned.json()).toMatchObject({ id: nodeId, cordoned: true, state: 'adopted' });
      expect(await database.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ cordoned: true });
      // Cordoning again changes nothing and records nothing.
      const again = await nodesCli('cordon', nodeId);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(new RegExp(`^ID +HOSTNAME +STATE +CORDONED[^\\n]*\\n${nodeId} +\\S+ +adopted +true `));

      // delete without --yes is a usage error before any request; an uncordoned node cannot be deleted.
      const unconfirmed = await nodesCli('delete', nodeId);
      expect(unconfirmed.code).toBe(2);
      expect(unconfirmed.stderr).toBe('error (INVALID_ARGUMENT): Deleting a node cannot be undone; confirm with --yes\n');
      const uncordoned = await nodesCli('uncordon', nodeId, '--json');
      expect(uncordoned.code, uncordoned.stderr).toBe(0);
      expect(uncordoned.json()).toMatchObject({ cordoned: false });
      const refused = await nodesCli('delete', nodeId, '--yes');
      expect(refused.code).toBe(5);
      expect(refused.stderr).toBe(`error (INVALID_STATE): Node ${nodeId} must be cordoned before it is deleted\n`);
      expect(await database.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ state: 'adopted', cordoned: false });

      // revoke-identity: every certificate revoked; the machine's next renewal is refused and bcd says what to do.
      const liveSerials = (await database.db.nodeCert.findMany({ where: { nodeId, revokedAt: null } })).map((c) => c.serial);
      expect(liveSerials).toHaveLength(1);
      const revoked = await nodesCli('revoke-identity', nodeId, '--json');
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(revoked.json()).toMatchObject({ id: nodeId, revokedSerials: liveSerials });
      expect(await database.db.nodeCert.count({ where: { nodeId, revokedAt: null } })).toBe(0);
      const renewal = await run(path.join(root, 'usr/local/bin/bcd'), ['node', '--once'], { env: env(root, { PATH: NO_NODE }) });
      expect(renewal.code).toBe(3);
      expect(renewal.stdout + renewal.stderr).toMatch(/bcd join --reset --yes/);
      const plain = await nodesCli('revoke-identity', nodeId);
      expect(plain.code, plain.stderr).toBe(0);
      expect(plain.stdout).toContain('revoked: none (no live certificate)');

      // cordon + delete --yes: retired, certificates revoked, hardware key freed.
      expect((await nodesCli('cordon', nodeId)).code).toBe(0);
      const deleted = await nodesCli('delete', nodeId, '--yes', '--json');
      expect(deleted.code, deleted.stderr).toBe(0);
      expect(deleted.json()).toMatchObject({ id: nodeId, state: 'retired' });
      expect(await database.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ state: 'retired', hardwareKey: null });
      // A retired node takes no cordon change and no adopt.
      const afterDelete = await nodesCli('uncordon', nodeId);
      expect(afterDelete.code).toBe(5);
      expect(afterDelete.stderr).toBe(`error (INVALID_STATE): Node ${nodeId} is retired\n`);
      const adoptRetired = await nodesCli('adopt', nodeId);
      expect(adoptRetired.code).toBe(5);
      expect(adoptRetired.stderr).toMatch(/only an adopting node can be adopted/);
      const missing = await nodesCli('cordon', 'node_doesnotexist');
      expect(missing.code).toBe(3);

      // The default pool runs no acceptance checks: JoinService adopted the node at once.
      expect(await eventTypes(nodeId)).toEqual([
        'node.joined',
        'node.adopted',
        'node.cordoned',
        'node.uncordoned',
        'node.identity-revoked',
        'node.identity-revoked',
        'node.cordoned',
        'node.deleted',
      ]);
      expect((await eventsOf(nodeId, 'security.certificate-revoked')).map(([, data]) => data)).toEqual([
        { nodeId, serial: liveSerials[0], reason: 'revoked' },
      ]);
      expect((await auditOf(nodeId)).filter(([, by]) => by === actor())).toEqual([
        ['node.cordoned', actor()],
        ['node.uncordoned', actor()],
        ['node.identity-revoked', actor()],
        ['node.identity-revoked', actor()],
        ['node.cordoned', actor()],
        ['node.deleted', actor()],
      ]);

      // Freed: the same machine joins again as a new node with a token that does not allow a reclaim.
      const rejoin = await run(
        path.join(root, 'usr/local/bin/bcd'),
        ['join', '--config', path.join(root, 'etc/bcd/config.toml'), '--reset', '--yes'],
        { env: env(root), input: await tokenOf(poolId) },
      );
      expect(rejoin.code, rejoin.stdout + rejoin.stderr).toBe(0);
      const newNodeId = nodeIdOf(root);
      expect(newNodeId).not.toBe(nodeId);
      expect(await database.db.node.findUniqueOrThrow({ where: { id: newNodeId } })).toMatchObject({
        state: 'adopted',
        identityGeneration: 1,
      });
    },
  );
});

describe('runbook: TPM replaced (a new EK)', () => {
  const tpmEnv = (root: string, tpm: Swtpm) => env(root, { PATH: NO_NODE, BCD_TPM: tpm.address });
  const rejoin = (root: string, tpm: Swtpm) =>
    run(bcd.binary, ['join', '--reset', '--yes', '--attestor', 'tpm', '--pool', poolId, '--no-wait'], { env: tpmEnv(root, tpm) });

  /** A machine joined with `--attestor tpm` on a vendor-rooted TPM, whose TPM is then replaced by another. */
  async function machineWithReplacedTpm() {
    const root = newMachineRoot();
    const before = await vendorTpm();
    const serverArgs = [
      '--server',
      server.url,
      '--serving-ca-pin',
      pins.servingCaPin,
      '--join-signing-pin',
      pins.joinSigningPin,
      '--join-encryption-pin',
      pins.joinEncryptionPin,
    ];
    const first = await run(bcd.binary, ['join', '--attestor', 'tpm', ...serverArgs, '--site', siteId, '--pool', poolId], {
      env: tpmEnv(root, before.tpm),
    });
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const oldNodeId = nodeIdOf(root);
    const oldNode = await database.db.node.findUniqueOrThrow({ where: { id: oldNodeId } });
    expect(oldNode.hardwareKey).not.toBeNull();
    expect(await database.db.tpmEkBinding.findUnique({ where: { ekSha256: before.ekHash } })).toMatchObject({ nodeId: oldNodeId });
    // Same machine (same DMI identifiers, so the same hardware key), another TPM: another EK.
    await before.tpm.stop();
    const after = await vendorTpm();
    return { root, before, after, oldNodeId, hardwareKey: oldNode.hardwareKey };
  }

  /** `nodes cordon` then `nodes delete --yes`, and what the delete frees. */
  async function cordonAndDelete(nodeId: string, ekHash: string) {
    expect((await nodesCli('cordon', nodeId)).code).toBe(0);
    const deleted = await nodesCli('delete', nodeId, '--yes', '--json');
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.json()).toMatchObject({ id: nodeId, state: 'retired', cordoned: true });
    expect(await database.db.tpmEkBinding.findUnique({ where: { ekSha256: ekHash } })).toBeNull();
    expect(await database.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ state: 'retired', hardwareKey: null });
    expect((await eventsOf(nodeId, 'node.deleted')).map(([, data]) => data)).toEqual([{ nodeId, serials: expect.any(Array) }]);
    expect((await auditOf(nodeId)).filter(([, by]) => by === actor())).toEqual([
      ['node.cordoned', actor()],
      ['node.deleted', actor()],
    ]);
  }

  async function expectNewNode(root: string, oldNodeId: string, hardwareKey: unknown, ekHash: string) {
    const newNodeId = nodeIdOf(root);
    expect(newNodeId).not.toBe(oldNodeId);
    expect(await database.db.node.findUniqueOrThrow({ where: { id: newNodeId } })).toMatchObject({ identityGeneration: 1, hardwareKey });
    expect(await database.db.tpmEkBinding.findUnique({ where: { ekSha256: ekHash } })).toMatchObject({ nodeId: newNodeId });
    expect((await eventsOf(newNodeId, 'node.joined')).map(([, data]) => data)).toEqual([
      expect.objectContaining({ attestor: 'tpm', reclaim: false }),
    ]);
    return newNodeId;
  }

  it(
    'cordon and delete --yes free the EK binding and the hardware key; the machine with its new TPM joins as a new node',
    { timeout: 240_000 },
    async () => {
      const m = await machineWithReplacedTpm();
      await cordonAndDelete(m.oldNodeId, m.before.ekHash);
      const joined = await rejoin(m.root, m.after.tpm);
      expect(joined.code, joined.stdout + joined.stderr).toBe(0);
      const newNodeId = await expectNewNode(m.root, m.oldNodeId, m.hardwareKey, m.after.ekHash);
      expect(joined.stdout).toContain(`joined: node ${newNodeId} in site ${siteId}`);
    },
  );

  it(
    'a join tried before the delete is refused and changes nothing; after the delete the same command joins as a new node',
    { timeout: 240_000 },
    async () => {
      const m = await machineWithReplacedTpm();
      const refusalsBefore = await database.db.event.count({ where: { type: 'security.join.refused' } });
      const early = await rejoin(m.root, m.after.tpm);
      expect(early.code, early.stdout + early.stderr).toBe(1);
      expect(early.stdout).toBe(`refused: Join refused (ACCESS_DENIED); EK hash ${m.after.ekHash}\n`);
      const refusals = await database.db.event.findMany({ where: { type: 'security.join.refused' }, orderBy: { id: 'asc' } });
      expect(refusals.slice(refusalsBefore).map((e) => (e.data as { reason: string }).reason)).toEqual(['tpm:reclaim']);
      expect(nodeIdOf(m.root)).toBe(m.oldNodeId);
      expect(await database.db.node.findUniqueOrThrow({ where: { id: m.oldNodeId } })).toMatchObject({
        state: 'adopted',
        identityGeneration: 1,
        hardwareKey: m.hardwareKey,
      });
      expect(await database.db.tpmEkBinding.findUnique({ where: { ekSha256: m.after.ekHash } })).toBeNull();

      await cordonAndDelete(m.oldNodeId, m.before.ekHash);
      const joined = await rejoin(m.root, m.after.tpm);
      expect(joined.code, joined.stdout + joined.stderr).toBe(0);
      await expectNewNode(m.root, m.oldNodeId, m.hardwareKey, m.after.ekHash);
    },
  );
});

describe('runbook: the node joined but stays adopting', () => {
  it(
    'acceptance fails on the machine (AcceptanceFailed, node.acceptance.failed); nodes adopt adopts it once',
    { timeout: 240_000 },
    async () => {
      const checkedPool = (
        await createPool(database.db, admin, {
          tenantId,
          siteId,
          name: 'checked',
          agent: 'bcd',
          policy: { acceptance: [{ check: 'min-cpus', min: 100_000 }] },
        })
      ).id;
      const { root, nodeId } = await installedMachine(checkedPool);

      // bcd node, as bcd.service runs it, holds its session and runs the pool's check, which this machine fails.
      const daemon = spawn(path.join(root, 'usr/local/bin/bcd'), ['node'], { env: env(root, { PATH: NO_NODE }), stdio: 'ignore' });
      try {
        const deadline = Date.now() + 90_000;
        while (!(await eventTypes(nodeId)).includes('node.acceptance.failed')) {
          if (daemon.exitCode !== null || Date.now() > deadline) throw new Error(`no node.acceptance.failed: ${await eventTypes(nodeId)}`);
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      } finally {
        daemon.kill('SIGTERM');
      }
      const shown = await nodesCli('get', nodeId, '--json');
      expect(shown.code, shown.stderr).toBe(0);
      const detail = shown.json() as { state: string; conditions: { type: string; status: boolean }[] };
      expect(detail.state).toBe('adopting');
      expect(detail.conditions).toContainEqual(expect.objectContaining({ type: 'AcceptanceFailed', status: true }));
      const table = await nodesCli('get', nodeId);
      expect(table.stdout).toMatch(/AcceptanceFailed/);

      const adopted = await nodesCli('adopt', nodeId);
      expect(adopted.code, adopted.stderr).toBe(0);
      expect(adopted.stdout).toMatch(new RegExp(`\\n${nodeId} +\\S+ +adopted +false `));
      expect(await database.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ state: 'adopted' });
      // Adopting an adopted node changes nothing and records nothing.
      const twice = await nodesCli('adopt', nodeId, '--json');
      expect(twice.code, twice.stderr).toBe(0);
      expect(twice.json()).toMatchObject({ state: 'adopted' });

      expect(await eventTypes(nodeId)).toEqual([
        'node.joined',
        'node.connected',
        'node.acceptance.started',
        'node.acceptance.failed',
        'node.adopted',
      ]);
      expect((await eventsOf(nodeId, 'node.adopted')).map(([, data]) => data)).toEqual([{ nodeId, by: 'operator' }]);
      expect((await auditOf(nodeId)).filter(([, by]) => by === actor())).toEqual([['node.adopted', actor()]]);
    },
  );
});

import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newMachineRoot, run, startBcdServer, type BcdBuild, type BcdServer } from '../../test/bcd-build';
import { parseCloudConfig, type WrittenFile } from '../../test/cloud-config';
import { defaultPool, newServerSecret, type ServerDatabase, type ServerProcess } from '../../test/server-process';
import { insertApiKey } from '../api-keys/api-keys';
import { principalOf, type Principal } from '../authz/principal';
import { loadPki } from '../pki/bundle/store';
import { bootstrapPins } from '../pki/pins-summary';
import { createJoinToken } from '../tokens/join-tokens';
import { TOKEN_FILE } from './cloud-config';

// A provisioned join end to end: the real server and gateway, user data from the REST API, and the built bcd
// running the user data's own join command on a re-imaged machine (BCD_ROOT: the same DMI identity, no identity).

const secret = newServerSecret();
let started: BcdServer | undefined;
let database: ServerDatabase;
let server: ServerProcess;
let bcd: BcdBuild;
let pool: { id: string; ownerTenantId: string };
let admin: Principal;
let apiKey: string;
let pinArgs: string[];

beforeAll(async () => {
  started = await startBcdServer('provisioned_flow', secret);
  ({ bcd, database, server } = started);
  pool = await defaultPool(database.db);
  admin = principalOf('local', 'provisioned-flow-test', [[pool.ownerTenantId, 'admin']]);
  apiKey = (await insertApiKey(database.db, { tenantId: pool.ownerTenantId, role: 'operator', name: 'deploy' }, 'test')).key;
  const pins = bootstrapPins(await loadPki(database.db, secret));
  pinArgs = [
    '--serving-ca-pin',
    pins.servingCaPin,
    '--join-signing-pin',
    pins.joinSigningKeyPin,
    '--join-encryption-pin',
    pins.joinEncryptionKeyPin,
  ];
}, 300_000);

afterAll(async () => {
  await started?.stop();
});

const env = (root: string) => ({ PATH: '/usr/sbin:/usr/bin:/sbin:/bin', BCD_ROOT: root }) as unknown as NodeJS.ProcessEnv;
const identityOf = (root: string) => JSON.parse(readFileSync(path.join(root, 'var/lib/bcd/identity.json'), 'utf8')) as { nodeId: string };

/** A machine joined with an ordinary token, as bcd does it: its root and node id. */
async function joinedMachine() {
  const root = newMachineRoot();
  const { token } = await createJoinToken(database.db, admin, {
    tenantId: pool.ownerTenantId,
    poolId: pool.id,
    ttlSeconds: 3600,
    maxUses: 1,
    allowReclaim: false,
    idempotencyKey: `first-${root}`,
  });
  const file = path.join(root, 'token');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  const result = await run(bcd.binary, ['join', '--server', server.url, ...pinArgs, '--token-file', file], { env: env(root) });
  expect(result.code, result.stderr).toBe(0);
  return { root, nodeId: identityOf(root).nodeId };
}

/** The same hardware, re-imaged: its DMI identity, nothing else. */
function reimaged(root: string): string {
  const fresh = path.join(root, '..', `${path.basename(root)}-reimaged-${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(path.join(fresh, 'sys/class/dmi/id'), { recursive: true });
  for (const name of ['product_uuid', 'product_serial'])
    copyFileSync(path.join(root, 'sys/class/dmi/id', name), path.join(fresh, 'sys/class/dmi/id', name));
  return fresh;
}

async function userData(nodeId: string) {
  const response = await fetch(`${server.url}/api/compute/v1/tenants/${pool.ownerTenantId}/nodes/${nodeId}/user-data`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ttlSeconds: 900, serverUrl: server.url, sha256: { amd64: bcd.sha256 } }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { tokenId: string; userData: string };
}

/**
 * Does what cloud-init does with the user data on `root`: writes the token file (0400) and runs the user data's
 * `bcd join` argv with the built bcd, the token file's path taken under the machine's root.
 */
async function runUserDataJoin(root: string, text: string, change: (argv: string[]) => string[] = (a) => a) {
  const doc = parseCloudConfig(text);
  const file = (doc.write_files as WrittenFile[]).find((f) => f.path === TOKEN_FILE)!;
  expect(file.permissions).toBe('0400');
  const tokenPath = path.join(root, TOKEN_FILE);
  mkdirSync(path.dirname(tokenPath), { recursive: true });
  writeFileSync(tokenPath, file.content);
  chmodSync(tokenPath, 0o400);
  const join = (doc.runcmd as string[][]).find((c) => c[1] === 'join')!;
  const argv = change(join.slice(1).map((a) => (a === TOKEN_FILE ? tokenPath : a)));
  return { result: await run(bcd.binary, argv, { env: env(root) }), tokenPath };
}

describe('bcd join --node-id with a provisioned token', () => {
  it('joins the re-imaged machine back as its node: generation + 1, older certificate reclaimed', { timeout: 180_000 }, async () => {
    const first = await joinedMachine();
    const before = await database.db.nodeCert.findMany({ where: { nodeId: first.nodeId } });
    const { tokenId, userData: text } = await userData(first.nodeId);

    const root = reimaged(first.root);
    const { result, tokenPath } = await runUserDataJoin(root, text);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`joined: node ${first.nodeId}`);
    expect(identityOf(root).nodeId).toBe(first.nodeId);
    // bcd deletes the token file once it joined.
    expect(existsSync(tokenPath)).toBe(false);

    expect(await database.db.node.findUniqueOrThrow({ where: { id: first.nodeId } })).toMatchObject({ identityGeneration: 2 });
    const certs = await database.db.nodeCert.findMany({ where: { nodeId: first.nodeId } });
    expect(certs.find((c) => c.serial === before[0]!.serial)).toMatchObject({ revocationReason: 'reclaimed' });
    expect(certs.filter((c) => c.revokedAt === null).map((c) => c.identityGeneration)).toEqual([2]);
    const audit = await database.db.auditEntry.findFirstOrThrow({
      where: { resource: `compute-node/${first.nodeId}`, action: 'node.reclaimed' },
    });
    expect(audit.actor).toBe(`join-token:${tokenId}`);
    expect((await database.db.joinToken.findUniqueOrThrow({ where: { id: tokenId } })).usesLeft).toBe(0);
  });

  it('refuses to store an answer for another node than --node-id', { timeout: 180_000 }, async () => {
    const target = await joinedMachine();
    const other = await joinedMachine();
    const { userData: text } = await userData(target.nodeId);
    const root = reimaged(target.root);
    const { result } = await runUserDataJoin(root, text, (argv) => argv.map((a) => (a === target.nodeId ? other.nodeId : a)));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`not node ${other.nodeId}: nothing was stored`);
    expect(existsSync(path.join(root, 'var/lib/bcd/identity.json'))).toBe(false);
    expect(existsSync(path.join(root, 'var/lib/bcd/node.key'))).toBe(false);
  });

  it('deletes the token file when the answer is for another node than --node-id', { timeout: 180_000 }, async () => {
    const target = await joinedMachine();
    const other = await joinedMachine();
    const { tokenId, userData: text } = await userData(target.nodeId);
    const root = reimaged(target.root);
    const { result, tokenPath } = await runUserDataJoin(root, text, (argv) => argv.map((a) => (a === target.nodeId ? other.nodeId : a)));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('nothing was stored');
    // The join spent the token; it is not left on the machine for a later run.
    expect((await database.db.joinToken.findUniqueOrThrow({ where: { id: tokenId } })).usesLeft).toBe(0);
    expect(existsSync(tokenPath)).toBe(false);
  });

  it('takes --node-id only as a node id, never with --attestor tpm', async () => {
    const root = newMachineRoot();
    for (const extra of [
      ['--node-id', 'not-a-node'],
      ['--node-id', 'node_abc', '--attestor', 'tpm', '--site', 'site_x'],
    ]) {
      const result = await run(bcd.binary, ['join', '--server', server.url, ...pinArgs, ...extra], { env: env(root) });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain('--node-id');
    }
  });
});

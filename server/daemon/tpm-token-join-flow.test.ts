import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newMachineRoot, run, startBcdServer, type BcdBuild, type BcdServer } from '../../test/bcd-build';
import { defaultPool, newServerSecret, type ServerDatabase, type ServerProcess } from '../../test/server-process';
import { startSwtpm, type Swtpm } from '../../test/swtpm';
import { decodeKeyBlob } from '../../agent/tpm/keys';
import { p256SpkiOf } from '../../agent/tpm/public-area';
import { principalOf, type Principal } from '../authz/principal';
import { loadPki } from '../pki/bundle/store';
import { installPins } from '../pki/pins-summary';
import { createJoinToken } from '../tokens/join-tokens';

// The built bcd's token join keeps the node key in the host's TPM whenever one opens (swtpm here, named by
// BCD_TPM or --tpm), against the production server and a real gateway: node.key holds only the key's TPM record,
// the session and renewals sign in the TPM, a software identity moves its next key into a TPM that appears, and
// bcd doctor says where the key lives. This container has no /dev/tpmrm0, so with no TPM named bcd finds none.

const secret = newServerSecret();
let database: ServerDatabase;
let server: ServerProcess;
let bcd: BcdBuild;
let started: BcdServer | undefined;
let admin: Principal;
let pool: { id: string; ownerTenantId: string };
let pins: ReturnType<typeof installPins>;
let tokens = 0;
const swtpms: Swtpm[] = [];

beforeAll(async () => {
  started = await startBcdServer('tpm_token_join', secret);
  ({ bcd, database, server } = started);
  process.env.BETTER_COMPUTE_SECRET = secret;
  pool = await defaultPool(database.db);
  admin = principalOf('local', 'tpm-token-join-test', [[pool.ownerTenantId, 'admin']]);
  pins = installPins(await loadPki(database.db, secret));
}, 300_000);

afterAll(async () => {
  await Promise.all(swtpms.map((s) => s.stop()));
  await started?.stop();
});

const newTpm = async () => {
  const swtpm = await startSwtpm();
  swtpms.push(swtpm);
  return swtpm;
};
const newToken = async () =>
  (
    await createJoinToken(database.db, admin, {
      tenantId: pool.ownerTenantId,
      poolId: pool.id,
      ttlSeconds: 3600,
      allowReclaim: false,
      idempotencyKey: `tpm-token-join-${++tokens}`,
      maxUses: 1,
    })
  ).token!;
const env = (root: string, extra: Record<string, string> = {}) =>
  ({ PATH: '/nonexistent', BCD_ROOT: root, ...extra }) as unknown as NodeJS.ProcessEnv;
const serverArgs = () => [
  '--server',
  server.url,
  '--serving-ca-pin',
  pins.servingCaPin,
  '--join-signing-pin',
  pins.joinSigningKeyPin,
  '--join-encryption-pin',
  pins.joinEncryptionKeyPin,
];
const dataDir = (root: string) => path.join(root, 'var/lib/bcd');
const nodeKey = (root: string) => readFileSync(path.join(dataDir(root), 'node.key'), 'utf8');
const identityOf = (root: string) =>
  JSON.parse(readFileSync(path.join(dataDir(root), 'identity.json'), 'utf8')) as { nodeId: string; certificateChain: string[] };

/** Every file under `root` whose text holds a PEM private key (PKCS#8 or any other). */
function privateKeyFiles(root: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(root, { recursive: true, encoding: 'utf8' })) {
    const file = path.join(root, entry);
    if (statSync(file).isFile() && /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(readFileSync(file, 'latin1'))) found.push(entry);
  }
  return found;
}

/** The leaf certifies the key node.key's TPM record holds. */
function expectLeafCertifiesTpmKey(root: string) {
  const leaf = new X509Certificate(Buffer.from(identityOf(root).certificateChain[0]!, 'base64'));
  const spki = leaf.publicKey.export({ type: 'spki', format: 'der' });
  expect(spki.equals(p256SpkiOf(decodeKeyBlob(nodeKey(root)).publicArea))).toBe(true);
}

async function joinedEvents(nodeId: string) {
  const events = await database.db.event.findMany({ where: { type: 'node.joined' }, orderBy: { id: 'asc' } });
  return events.filter((e) => (e.data as { nodeId?: string }).nodeId === nodeId).map((e) => e.data as Record<string, unknown>);
}

const keyLine = (stdout: string) => stdout.split('\n').find((line) => / key {7}/.test(line)) ?? '';

/** `bcd node` until its session is open through the gateway and session.json says connected; then SIGTERM. */
async function holdSession(root: string, extra: Record<string, string>) {
  const child = spawn(bcd.binary, ['node'], { env: env(root, extra) });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const connected = () => {
    try {
      return (JSON.parse(readFileSync(path.join(dataDir(root), 'session.json'), 'utf8')) as { connected?: boolean }).connected === true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 600 && !(/session \S+ open through/.test(out) && connected()); i++) await new Promise((r) => setTimeout(r, 50));
  child.kill('SIGTERM');
  return { out, connected: connected(), code: await exited };
}

describe('bcd join with a token on a machine with a TPM', () => {
  it('makes the node key in the TPM, records it unattested, holds its session and renews in the TPM', { timeout: 240_000 }, async () => {
    const swtpm = await newTpm();
    const root = newMachineRoot();
    const tpm = { BCD_TPM: swtpm.address };
    const joined = await run(bcd.binary, ['join', ...serverArgs()], { env: env(root, tpm), input: `${await newToken()}\n` });
    expect(joined.code, joined.stdout + joined.stderr).toBe(0);
    const { nodeId } = identityOf(root);
    expect(joined.stdout).toContain(`joined: node ${nodeId} in site `);
    expect(joined.stdout).toContain(`its key is held by the TPM (${swtpm.address}), unattested: nothing proves that to the control plane`);
    // node.key is the key's TPM record only, 0600; no private key is anywhere on the machine's disk.
    expect(nodeKey(root)).toMatch(/^bcd-tpm-key v1\npublic [A-Za-z0-9+/=]+\nprivate [A-Za-z0-9+/=]+\n$/);
    expect((statSync(path.join(dataDir(root), 'node.key')).mode & 0o777).toString(8)).toBe('600');
    expect(privateKeyFiles(root)).toEqual([]);
    expectLeafCertifiesTpmKey(root);
    // A token proves nothing about where the key lives: the control plane records it unattested.
    expect(await joinedEvents(nodeId)).toMatchObject([{ attestor: 'join-token', nodeKey: 'unattested' }]);

    const doctor = await run(bcd.binary, ['doctor'], { env: env(root, tpm) });
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
    expect(keyLine(doctor.stdout)).toBe(
      `ok   key       TPM-held (node.key holds its TPM record; loads in the TPM at ${swtpm.address}; unattested)`,
    );

    // Another TPM than the one holding the key (or none) cannot load it: doctor fails the key line.
    const elsewhere = await run(bcd.binary, ['doctor'], { env: env(root, { BCD_TPM: 'swtpm:127.0.0.1:1' }) });
    expect(elsewhere.code).toBe(1);
    expect(keyLine(elsewhere.stdout)).toMatch(
      /^FAIL key {7}TPM-held \(node\.key holds its TPM record\), but the TPM at swtpm:127\.0\.0\.1:1 cannot load it: cannot open the TPM/,
    );

    // The session opens through the gateway with mutual TLS whose CertificateVerify the TPM signs.
    const session = await holdSession(root, tpm);
    expect(session.out).toMatch(/session \S+ open through/);
    expect(session.connected).toBe(true);
    expect(session.code).toBe(0);

    // A renewal makes the next key in the TPM too.
    const before = nodeKey(root);
    const renewed = await run(bcd.binary, ['node', '--once'], { env: env(root, tpm) });
    expect(renewed.code, renewed.stdout + renewed.stderr).toBe(0);
    expect(renewed.stdout).toContain('renewed spiffe://');
    expect(nodeKey(root)).toMatch(/^bcd-tpm-key v1\n/);
    expect(nodeKey(root)).not.toBe(before);
    expectLeafCertifiesTpmKey(root);
    expect(privateKeyFiles(root)).toEqual([]);
    expect(await database.db.nodeCert.count({ where: { nodeId } })).toBe(2);
  });

  it('with a TPM named that cannot be opened fails clearly, writes nothing and spends no token', { timeout: 120_000 }, async () => {
    const ways: { args: string[]; extra: Record<string, string> }[] = [
      { args: ['--tpm', 'swtpm:127.0.0.1:1'], extra: {} },
      { args: [], extra: { BCD_TPM: 'swtpm:127.0.0.1:1' } },
    ];
    for (const how of ways) {
      const root = newMachineRoot();
      const token = await newToken();
      const result = await run(bcd.binary, ['join', ...serverArgs(), ...how.args], { env: env(root, how.extra), input: `${token}\n` });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('cannot open the TPM at swtpm:127.0.0.1:1');
      expect(existsSync(path.join(dataDir(root), 'node.key'))).toBe(false);
      expect(existsSync(path.join(root, 'etc/bcd/config.toml'))).toBe(false);
      expect(await database.db.joinToken.findUniqueOrThrow({ where: { id: token.slice(5).split('.')[0]! } })).toMatchObject({
        usesLeft: 1,
      });
    }
  });
});

describe('bcd join with a token on a machine without a TPM', () => {
  it('writes a PKCS#8 node.key as before, and a TPM that appears later takes the next key', { timeout: 240_000 }, async () => {
    expect(existsSync('/dev/tpmrm0')).toBe(false);
    const root = newMachineRoot();
    const joined = await run(bcd.binary, ['join', ...serverArgs()], { env: env(root), input: `${await newToken()}\n` });
    expect(joined.code, joined.stdout + joined.stderr).toBe(0);
    expect(joined.stdout).toContain('; its key is in software (node.key)');
    expect(nodeKey(root)).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    const { nodeId } = identityOf(root);
    expect(await joinedEvents(nodeId)).toMatchObject([{ attestor: 'join-token', nodeKey: 'unattested' }]);
    const doctor = await run(bcd.binary, ['doctor'], { env: env(root) });
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
    expect(keyLine(doctor.stdout)).toBe('ok   key       software (node.key)');
    const software = await run(bcd.binary, ['node', '--once'], { env: env(root) });
    expect(software.code, software.stdout + software.stderr).toBe(0);
    expect(nodeKey(root)).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);

    // A TPM appears: doctor says so, and the next renewal makes the key in it (proved by the software key).
    const swtpm = await newTpm();
    const tpm = { BCD_TPM: swtpm.address };
    const told = await run(bcd.binary, ['doctor'], { env: env(root, tpm) });
    expect(keyLine(told.stdout)).toBe(`ok   key       software (node.key); the next renewal makes the key in the TPM at ${swtpm.address}`);
    const moved = await run(bcd.binary, ['node', '--once'], { env: env(root, tpm) });
    expect(moved.code, moved.stdout + moved.stderr).toBe(0);
    expect(nodeKey(root)).toMatch(/^bcd-tpm-key v1\n/);
    expectLeafCertifiesTpmKey(root);
    // The software key leaves no copy behind (not even as node.key.previous).
    expect(privateKeyFiles(root)).toEqual([]);
    const after = await run(bcd.binary, ['doctor'], { env: env(root, tpm) });
    expect(keyLine(after.stdout)).toMatch(/^ok {3}key {7}TPM-held \(.*unattested\)$/);

    // From then on it renews in the TPM and holds its session through it.
    const again = await run(bcd.binary, ['node', '--once'], { env: env(root, tpm) });
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expectLeafCertifiesTpmKey(root);
    const session = await holdSession(root, tpm);
    expect(session.connected).toBe(true);
    expect(await database.db.nodeCert.count({ where: { nodeId } })).toBe(4);
  });
});

import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatConfigToml, type BcdConfig } from '../../agent/bcd/config-toml';
import { handOverIdentity } from '../../agent/helper/hand-over';
import { buildBcdForTests, newMachineRoot, removeMachineRoots, run } from '../../test/bcd-build';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { mintToken } from '../../test/join-harness';
import { createRenewHarness, type RenewHarness } from '../../test/renew-harness';
import { startSwtpm, type Swtpm } from '../../test/swtpm';
import { makeAk, softwareNode, tpmBoundNode } from '../../test/tpm-node';
import { installPins } from '../pki/pins-summary';

// The helper split with the built bcd: `bcd helper` as root holds the TPM (swtpm), `bcd node` runs as the
// unprivileged user `nobody` (uid 65534, through setpriv), and the [helper] table of config.toml names both.
// The node renews through the real gateway with key attestation and opens its session, every signature and the
// next key made by the helper; without the helper it fails loudly rather than opening the TPM itself.
const NOBODY = { name: 'nobody', uid: 65534, gid: 65534 };
let bcd: Awaited<ReturnType<typeof buildBcdForTests>>;
let r: RenewHarness;
let swtpm: Swtpm;
let ak: { blob: Parameters<typeof tpmBoundNode>[2]['blob']; statement: string };
const children = new Set<ChildProcess>();

beforeAll(async () => {
  [bcd, r, swtpm] = await Promise.all([buildBcdForTests(), createRenewHarness(), startSwtpm()]);
  const [blob, statement] = await makeAk(swtpm.address);
  ak = { blob, statement };
}, 600_000);
afterAll(async () => {
  children.forEach((child) => child.kill('SIGKILL'));
  await swtpm?.stop();
  await r?.close();
  removeMachineRoots();
});

/** A machine root whose config.toml has a [helper] table for `nobody`, readable by it as the install leaves it. */
function machineRoot(siteId: string) {
  const root = newMachineRoot();
  chmodSync(root, 0o755);
  const socket = path.join(root, 'run/bcd-helper/helper.sock');
  const pins = installPins(r.h.bundle);
  const config: BcdConfig = {
    gatewayUrl: r.target.gatewayUrl,
    site: siteId,
    servingCaSpkiPin: pins.servingCaPin,
    joinSigningKeyPin: pins.joinSigningKeyPin,
    joinEncryptionKeyPin: pins.joinEncryptionKeyPin,
    helper: { user: NOBODY.name, socket },
  };
  mkdirSync(path.join(root, 'etc/bcd'), { recursive: true });
  // As on a host: /var/lib is traversable by everyone; bcd's own directory is the [helper] user's once handed over.
  mkdirSync(path.join(root, 'var/lib'), { recursive: true, mode: 0o755 });
  const configPath = path.join(root, 'etc/bcd/config.toml');
  writeFileSync(configPath, formatConfigToml(config), { mode: 0o640 });
  chownSync(configPath, 0, NOBODY.gid);
  return { root, socket, configPath, identityDir: path.join(root, 'var/lib/bcd') };
}

const env = (root: string, extra: Record<string, string> = {}) =>
  ({ PATH: '/usr/bin:/bin', BCD_ROOT: root, ...extra }) as unknown as NodeJS.ProcessEnv;

/** `bcd <args>` as `nobody`, with no supplementary groups. */
const asNobody = (args: string[]) =>
  ['setpriv', [`--reuid=${NOBODY.uid}`, `--regid=${NOBODY.gid}`, '--clear-groups', bcd.binary, ...args]] as const;

/** `bcd doctor` as `nobody`. */
function doctorAsNobody(root: string) {
  const [command, args] = asNobody(['doctor']);
  return run(command, [...args], { env: env(root) });
}

function start(command: string, args: readonly string[], environment: NodeJS.ProcessEnv) {
  const child = spawn(command, args, { env: environment });
  children.add(child);
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function until(check: () => boolean, what: string) {
  for (let i = 0; i < 600 && !check(); i++) await new Promise((res) => setTimeout(res, 50));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
}

/** A machine with a TPM-held identity (the certificate names the AK), handed to `nobody` as a root join does. */
async function tpmMachine(options: { expired?: boolean } = {}) {
  const t = await createTestTenant(testDb());
  const m = machineRoot(t.pool.siteId);
  const validity = options.expired ? { notBefore: new Date(Date.now() - 2 * 3_600_000), ttlSeconds: 3600 } : undefined;
  const node = await tpmBoundNode(r, swtpm.address, ak, m.identityDir, validity);
  if (options.expired) {
    const { poolId } = await testDb().node.findUniqueOrThrow({ where: { id: node.nodeId } });
    await testDb().pool.update({ where: { id: poolId! }, data: { policy: { joinAttestors: ['join-token', 'x509pop'] } } });
  }
  await handOverIdentity(m.identityDir, NOBODY);
  return { ...m, ...node };
}

/** A machine whose root `bcd join` (no TPM named, no /dev/tpmrm0) made a software identity, handed to `nobody`. */
async function softwareMachine() {
  const t = await createTestTenant(testDb());
  const m = machineRoot(t.pool.siteId);
  writeFileSync(path.join(m.root, 'etc/bcd/join-encryption.jwk'), `${JSON.stringify(r.h.trust.encryptionJwk)}\n`);
  const joined = await run(bcd.binary, ['join'], { env: env(m.root), input: `${(await mintToken(t)).token!}\n` });
  expect(joined.code, joined.stdout + joined.stderr).toBe(0);
  expect(readFileSync(path.join(m.identityDir, 'node.key'), 'utf8')).toContain('-----BEGIN PRIVATE KEY-----');
  const { nodeId } = JSON.parse(readFileSync(path.join(m.identityDir, 'identity.json'), 'utf8')) as { nodeId: string };
  return { ...m, nodeId };
}

/** Every file of the identity directory that holds a PKCS#8 key (the current one or a `.previous` copy). */
const softwareKeyFiles = (dir: string) =>
  readdirSync(dir).filter((name) => readFileSync(path.join(dir, name), 'utf8').includes('PRIVATE KEY'));

/** `bcd helper` as root with the swtpm, or (`tpm: null`) on a host without a TPM: none named, no /dev/tpmrm0. */
async function startHelper(m: { root: string; socket: string }, tpm: string | null = swtpm.address) {
  const helper = start(bcd.binary, ['helper', ...(tpm ? ['--tpm', tpm] : [])], env(m.root));
  await until(() => existsSync(m.socket), `bcd helper's socket (${helper.output()})`);
  return helper;
}

describe('bcd node as an unprivileged user beside bcd helper', () => {
  it('a root bcd join hands the identity to the [helper] user, which renews a software key by itself', { timeout: 180_000 }, async () => {
    const t = await createTestTenant(testDb());
    const m = machineRoot(t.pool.siteId);
    writeFileSync(path.join(m.root, 'etc/bcd/join-encryption.jwk'), `${JSON.stringify(r.h.trust.encryptionJwk)}\n`);
    const joined = await run(bcd.binary, ['join'], { env: env(m.root), input: `${(await mintToken(t)).token!}\n` });
    expect(joined.code, joined.stdout + joined.stderr).toBe(0);
    expect(joined.stdout).toContain(`handed ${m.identityDir} to nobody`);
    for (const name of ['', 'identity.json', 'node.key']) {
      const stat = statSync(path.join(m.identityDir, name));
      expect([name, stat.uid, stat.gid]).toEqual([name, NOBODY.uid, NOBODY.gid]);
    }
    expect(statSync(m.identityDir).mode & 0o777).toBe(0o700);
    // A software node.key needs no helper: none runs, and nobody's bcd node renews with it.
    const [command, args] = asNobody(['node', '--once']);
    const renewed = await run(command, [...args], { env: env(m.root) });
    expect(renewed.code, renewed.stdout + renewed.stderr).toBe(0);
    expect(renewed.stdout).toContain('renewed spiffe://');
    expect(statSync(path.join(m.identityDir, 'node.key')).uid).toBe(NOBODY.uid);
  });

  it('refuses to run bcd node as root under [helper]', { timeout: 60_000 }, async () => {
    const m = machineRoot('site_none');
    const result = await run(bcd.binary, ['node', '--once'], { env: env(m.root) });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('refusing to run as root under [helper]: run it as nobody');
  });

  it('renews a TPM-held key through the gateway with the helper signing and making the next key', { timeout: 180_000 }, async () => {
    const m = await tpmMachine();
    const helper = await startHelper(m);
    const socket = statSync(m.socket);
    expect([socket.uid, socket.mode & 0o777]).toEqual([NOBODY.uid, 0o600]);
    const before = readFileSync(path.join(m.identityDir, 'node.key'), 'utf8');
    // BCD_TPM is in nobody's environment too: under [helper] bcd node never opens a TPM itself.
    const [command, args] = asNobody(['node', '--once']);
    const renewed = await run(command, [...args], { env: env(m.root, { BCD_TPM: swtpm.address }) });
    expect(renewed.code, renewed.stdout + renewed.stderr + helper.output()).toBe(0);
    expect(renewed.stdout).toContain('renewed spiffe://');
    const after = readFileSync(path.join(m.identityDir, 'node.key'), 'utf8');
    expect(after).toMatch(/^bcd-tpm-key v1\n/);
    expect(after).not.toBe(before);
    expect(statSync(path.join(m.identityDir, 'node.key')).uid).toBe(NOBODY.uid);
    // The token join's, the TPM-bound one, and the renewal's (which JoinService admits only with the AK's Certify).
    expect(await testDb().nodeCert.count({ where: { nodeId: m.nodeId } })).toBe(3);

    const session = start(command, [...asNobody(['node'])[1]], env(m.root));
    await until(() => /session \S+ open through/.test(session.output()), `the session (${session.output()})`);
    session.child.kill('SIGTERM');
    expect(await session.exited).toBe(0);
    helper.child.kill('SIGTERM');
    expect(await helper.exited).toBe(0);
  });

  it('re-joins an expired TPM-held identity with x509pop through the helper, then renews', { timeout: 180_000 }, async () => {
    const m = await tpmMachine({ expired: true });
    // As the kernel makes them: the machine's identifiers are root's alone, so nobody's bcd node cannot read them.
    for (const name of ['product_uuid', 'product_serial']) chmodSync(path.join(m.root, 'sys/class/dmi/id', name), 0o400);
    writeFileSync(path.join(m.root, 'etc/bcd/join-encryption.jwk'), `${JSON.stringify(r.h.trust.encryptionJwk)}\n`);
    const helper = await startHelper(m);
    const [command, args] = asNobody(['node', '--once']);
    const result = await run(command, [...args], { env: env(m.root) });
    expect(result.code, result.stdout + result.stderr + helper.output()).toBe(0);
    expect(result.stdout).toContain(`re-joined with x509pop as node ${m.nodeId}`);
    expect(result.stdout).toContain('renewed spiffe://');
    expect(readFileSync(path.join(m.identityDir, 'node.key'), 'utf8')).toMatch(/^bcd-tpm-key v1\n/);
    const joined = await testDb().event.findMany({ where: { tenantId: m.tenantId, type: 'node.joined' }, orderBy: { id: 'asc' } });
    expect(joined.map((e) => e.data)).toMatchObject([{ attestor: 'join-token' }, { attestor: 'x509pop', nodeKey: 'tpm' }]);
    helper.child.kill('SIGTERM');
    expect(await helper.exited).toBe(0);
  });

  it('moves a software identity into the TPM through the helper at its next renewal', { timeout: 240_000 }, async () => {
    const m = await softwareMachine();
    const helper = await startHelper(m);
    // bcd doctor asks the helper, as the renewal will, and says where the next key goes.
    const doctor = await doctorAsNobody(m.root);
    expect(doctor.stdout, doctor.stdout + doctor.stderr).toContain(
      `ok   key       software (node.key); the next renewal makes the key in the TPM through bcd helper (${m.socket})`,
    );
    const [command, args] = asNobody(['node', '--once']);
    const moved = await run(command, [...args], { env: env(m.root) });
    expect(moved.code, moved.stdout + moved.stderr + helper.output()).toBe(0);
    expect(moved.stdout).toContain('renewed spiffe://');
    // node.key holds the TPM record; no PKCS#8 key is left, not even the renewal's .previous copy.
    expect(readFileSync(path.join(m.identityDir, 'node.key'), 'utf8')).toMatch(/^bcd-tpm-key v1\n/);
    expect(softwareKeyFiles(m.identityDir)).toEqual([]);
    expect(statSync(path.join(m.identityDir, 'node.key')).uid).toBe(NOBODY.uid);
    expect(await testDb().nodeCert.count({ where: { nodeId: m.nodeId } })).toBe(2);

    // From then on the key is the helper's: the next renewal and the session sign through it.
    const moveKey = readFileSync(path.join(m.identityDir, 'node.key'), 'utf8');
    const again = await run(command, [...args], { env: env(m.root) });
    expect(again.code, again.stdout + again.stderr + helper.output()).toBe(0);
    expect(readFileSync(path.join(m.identityDir, 'node.key'), 'utf8')).toMatch(/^bcd-tpm-key v1\n/);
    expect(readFileSync(path.join(m.identityDir, 'node.key'), 'utf8')).not.toBe(moveKey);
    expect(await testDb().nodeCert.count({ where: { nodeId: m.nodeId } })).toBe(3);
    const session = start(command, [...asNobody(['node'])[1]], env(m.root));
    await until(() => /session \S+ open through/.test(session.output()), `the session (${session.output()})`);
    session.child.kill('SIGTERM');
    expect(await session.exited).toBe(0);
    helper.child.kill('SIGTERM');
    expect(await helper.exited).toBe(0);
    // Without the helper, nobody's bcd node cannot sign with the key at all.
    const node = start(command, args, env(m.root));
    await until(() => node.output().includes('renewal failed'), `a failed renewal (${node.output()})`);
    node.child.kill('SIGTERM');
    expect(node.output()).toContain(`renewal failed: bcd helper at ${m.socket}`);
    expect(await testDb().nodeCert.count({ where: { nodeId: m.nodeId } })).toBe(3);
  });

  it('keeps a software identity renewing in software when the helper reports no TPM', { timeout: 180_000 }, async () => {
    const m = await softwareMachine();
    const helper = await startHelper(m, null);
    const doctor = await doctorAsNobody(m.root);
    expect(doctor.stdout, doctor.stdout + doctor.stderr).toMatch(
      /ok {3}key {7}software \(node\.key\); the next renewal keeps it in software \(.*this host has no TPM/,
    );
    const before = readFileSync(path.join(m.identityDir, 'node.key'), 'utf8');
    const [command, args] = asNobody(['node', '--once']);
    const renewed = await run(command, [...args], { env: env(m.root) });
    expect(renewed.code, renewed.stdout + renewed.stderr + helper.output()).toBe(0);
    expect(renewed.stdout).toContain('renewed spiffe://');
    const after = readFileSync(path.join(m.identityDir, 'node.key'), 'utf8');
    expect(after).toContain('-----BEGIN PRIVATE KEY-----');
    expect(after).not.toBe(before);
    // Quietly: one line says why, and the renewal neither fails nor retries.
    const lines = `${renewed.stdout}${renewed.stderr}`.split('\n');
    expect(lines.filter((line) => line.includes('stays in software'))).toEqual([expect.stringContaining('this host has no TPM')]);
    expect(lines.filter((line) => line.includes('renewal failed'))).toEqual([]);
    expect(await testDb().nodeCert.count({ where: { nodeId: m.nodeId } })).toBe(2);
    helper.child.kill('SIGTERM');
    expect(await helper.exited).toBe(0);
  });

  it("re-joins an expired software identity with x509pop into the helper's TPM", { timeout: 180_000 }, async () => {
    const t = await createTestTenant(testDb());
    const m = machineRoot(t.pool.siteId);
    const node = await softwareNode(r, m.identityDir, { notBefore: new Date(Date.now() - 2 * 3_600_000), ttlSeconds: 3600 });
    const { poolId } = await testDb().node.findUniqueOrThrow({ where: { id: node.nodeId } });
    await testDb().pool.update({ where: { id: poolId! }, data: { policy: { joinAttestors: ['join-token', 'x509pop'] } } });
    await handOverIdentity(m.identityDir, NOBODY);
    writeFileSync(path.join(m.root, 'etc/bcd/join-encryption.jwk'), `${JSON.stringify(r.h.trust.encryptionJwk)}\n`);
    const helper = await startHelper(m);
    const [command, args] = asNobody(['node', '--once']);
    const result = await run(command, [...args], { env: env(m.root) });
    expect(result.code, result.stdout + result.stderr + helper.output()).toBe(0);
    expect(result.stdout).toContain(`re-joined with x509pop as node ${node.nodeId}`);
    expect(result.stdout).toContain('renewed spiffe://');
    // The re-join's key (kept as .previous by the renewal after it) is already the TPM's, and so is the renewal's.
    for (const name of ['node.key.previous', 'node.key'])
      expect([name, readFileSync(path.join(m.identityDir, name), 'utf8')]).toEqual([name, expect.stringMatching(/^bcd-tpm-key v1\n/)]);
    helper.child.kill('SIGTERM');
    expect(await helper.exited).toBe(0);
  });

  it('fails the renewal loudly, sending nothing, when the helper is not running', { timeout: 120_000 }, async () => {
    const m = await tpmMachine();
    const before = readFileSync(path.join(m.identityDir, 'node.key'), 'utf8');
    const [command, args] = asNobody(['node', '--once']);
    const node = start(command, args, env(m.root, { BCD_TPM: swtpm.address }));
    await until(() => node.output().includes('renewal failed'), `a failed renewal (${node.output()})`);
    node.child.kill('SIGTERM');
    expect(node.output()).toContain(`renewal failed: bcd helper at ${m.socket}`);
    expect(readFileSync(path.join(m.identityDir, 'node.key'), 'utf8')).toBe(before);
    expect(await testDb().nodeCert.count({ where: { nodeId: m.nodeId } })).toBe(2);
  });
});

import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatConfigToml } from '../../agent/bcd/config-toml';
import { buildBcdForTests, newMachineRoot, removeMachineRoots, run } from '../../test/bcd-build';
import { BASE, createRenewHarness, type RenewHarness } from '../../test/renew-harness';
import { startSwtpm, type Swtpm } from '../../test/swtpm';
import { makeAk, tpmBoundNode } from '../../test/tpm-node';
import { encodeKeyBlob } from '../../agent/tpm/keys';
import { installPins } from '../pki/pins-summary';
import { testDb } from '../../test/db';

// The built bcd executable with a TPM-held node key (swtpm over its socket protocol): `bcd node --once` renews
// through the real gateway with key attestation, and `bcd node` opens its session, both over mutual TLS whose
// CertificateVerify the TPM signs (agent/tls13).
let bcd: Awaited<ReturnType<typeof buildBcdForTests>>;
let r: RenewHarness;
let swtpm: Swtpm;
let ak: { blob: Parameters<typeof tpmBoundNode>[2]['blob']; statement: string };

beforeAll(async () => {
  [bcd, r, swtpm] = await Promise.all([buildBcdForTests(), createRenewHarness(), startSwtpm()]);
  const [blob, statement] = await makeAk(swtpm.address);
  ak = { blob, statement };
}, 600_000);
afterAll(async () => {
  await swtpm?.stop();
  await r?.close();
  removeMachineRoots();
});

/**
 * A machine root with config.toml naming the harness's gateway and pins, and a TPM-bound identity; `expired`: its
 * certificate ended an hour ago, in a pool that lists x509pop (the gateway's URL as an install script writes it).
 */
async function machine(options: { expired?: boolean } = {}) {
  const root = newMachineRoot();
  const identityDir = path.join(root, 'var/lib/bcd');
  mkdirSync(path.join(root, 'etc/bcd'), { recursive: true });
  const validity = options.expired ? { notBefore: new Date(Date.now() - 2 * 3_600_000), ttlSeconds: 3600 } : undefined;
  const node = await tpmBoundNode(r, swtpm.address, ak, identityDir, validity);
  if (options.expired) {
    const { poolId } = await testDb().node.findUniqueOrThrow({ where: { id: node.nodeId } });
    await testDb().pool.update({ where: { id: poolId! }, data: { policy: { joinAttestors: ['join-token', 'x509pop'] } } });
  }
  const pins = installPins(r.h.bundle);
  writeFileSync(
    path.join(root, 'etc/bcd/config.toml'),
    formatConfigToml({
      gatewayUrl: options.expired ? r.target.gatewayUrl : `${r.target.gatewayUrl}${BASE}`,
      site: node.siteId,
      servingCaSpkiPin: pins.servingCaPin,
      joinSigningKeyPin: pins.joinSigningKeyPin,
      joinEncryptionKeyPin: pins.joinEncryptionKeyPin,
    }),
  );
  return { root, identityDir, ...node };
}

const env = (root: string, extra: Record<string, string> = {}) =>
  ({ PATH: '/nonexistent', BCD_ROOT: root, ...extra }) as unknown as NodeJS.ProcessEnv;

describe('bcd node with a TPM-held key', () => {
  it('renews once through the gateway with the TPM from --tpm, and the renewed key is a TPM key again', { timeout: 120_000 }, async () => {
    const m = await machine();
    const before = readFileSync(path.join(m.identityDir, 'node.key'), 'utf8');
    const renewed = await run(bcd.binary, ['node', '--once', '--tpm', swtpm.address], { env: env(m.root) });
    expect(renewed.code, renewed.stdout + renewed.stderr).toBe(0);
    expect(renewed.stdout).toContain(`renewed spiffe://`);
    const after = readFileSync(path.join(m.identityDir, 'node.key'), 'utf8');
    expect(after).toMatch(/^bcd-tpm-key v1\n/);
    expect(after).not.toBe(before);
    expect(await testDb().nodeCert.count({ where: { nodeId: m.nodeId } })).toBe(3);
  });

  it('fails loudly, sending nothing, when BCD_TPM names no TPM', { timeout: 120_000 }, async () => {
    const m = await machine();
    const before = readFileSync(path.join(m.identityDir, 'node.key'), 'utf8');
    const child = spawn(bcd.binary, ['node', '--once'], { env: env(m.root, { BCD_TPM: 'swtpm:127.0.0.1:1' }) });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    // The first attempt's failure is enough; the loop would retry with backoff.
    for (let i = 0; i < 200 && !out.includes('renewal failed'); i++) await new Promise((res) => setTimeout(res, 50));
    child.kill('SIGTERM');
    expect(out).toContain('renewal failed: cannot open the TPM at swtpm:127.0.0.1:1');
    expect(readFileSync(path.join(m.identityDir, 'node.key'), 'utf8')).toBe(before);
    expect(await testDb().nodeCert.count({ where: { nodeId: m.nodeId } })).toBe(2);
  });

  it('re-joins an expired identity with x509pop and key attestation by itself, then renews', { timeout: 120_000 }, async () => {
    const m = await machine({ expired: true });
    const before = readFileSync(path.join(m.identityDir, 'node.key'), 'utf8');
    const result = await run(bcd.binary, ['node', '--once', '--tpm', swtpm.address], { env: env(m.root) });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`re-joined with x509pop as node ${m.nodeId}`);
    expect(result.stdout).toContain('renewed spiffe://');
    const after = readFileSync(path.join(m.identityDir, 'node.key'), 'utf8');
    expect(after).toMatch(/^bcd-tpm-key v1\n/);
    expect(after).not.toBe(before);
    expect(readFileSync(path.join(m.identityDir, 'ak.key'), 'utf8')).toBe(encodeKeyBlob(ak.blob));
    expect((await testDb().node.findUniqueOrThrow({ where: { id: m.nodeId } })).identityGeneration).toBe(2);
    // The token join's and the TPM-bound one (both reclaimed), the re-join's, and the renewal's.
    const certs = await testDb().nodeCert.findMany({ where: { nodeId: m.nodeId }, orderBy: { createdAt: 'asc' } });
    expect(certs.map((c) => [c.identityGeneration, c.revocationReason])).toEqual([
      [1, 'reclaimed'],
      [1, 'reclaimed'],
      [2, null],
      [2, null],
    ]);
    const joined = await testDb().event.findMany({ where: { tenantId: m.tenantId, type: 'node.joined' }, orderBy: { id: 'asc' } });
    expect(joined.map((e) => e.data)).toMatchObject([{ attestor: 'join-token' }, { attestor: 'x509pop', nodeKey: 'tpm' }]);
  });

  it('fails the re-join of an expired identity loudly, sending nothing, when BCD_TPM names no TPM', { timeout: 120_000 }, async () => {
    const m = await machine({ expired: true });
    const before = readFileSync(path.join(m.identityDir, 'node.key'), 'utf8');
    // Counted for this node only: other test files join and refuse on the same database at the same time. A round
    // one for this leaf would store a challenge whose subject is the node, or refuse into the node's tenant.
    const sent = () =>
      Promise.all([
        testDb().joinChallenge.count({ where: { subject: m.nodeId } }),
        testDb().event.count({ where: { tenantId: m.tenantId, type: 'security.join.refused' } }),
      ]);
    const quiet = await sent();
    const result = await run(bcd.binary, ['node', '--once'], { env: env(m.root, { BCD_TPM: 'swtpm:127.0.0.1:1' }) });
    expect(result.code, result.stdout + result.stderr).not.toBe(0);
    expect(result.stdout).toContain('the x509pop re-join failed: cannot open the TPM at swtpm:127.0.0.1:1');
    expect(readFileSync(path.join(m.identityDir, 'node.key'), 'utf8')).toBe(before);
    expect((await testDb().node.findUniqueOrThrow({ where: { id: m.nodeId } })).identityGeneration).toBe(1);
    // No round one reached JoinService: it issued no challenge and refused nothing.
    expect(await sent()).toEqual(quiet);
  });

  it('opens its session through the gateway and is connected', { timeout: 120_000 }, async () => {
    const m = await machine();
    const child = spawn(bcd.binary, ['node'], { env: env(m.root, { BCD_TPM: swtpm.address }) });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    for (let i = 0; i < 400 && !/session \S+ open through/.test(out); i++) await new Promise((res) => setTimeout(res, 50));
    expect(out).toMatch(/session \S+ open through/);
    const state = () => {
      try {
        return JSON.parse(readFileSync(path.join(m.identityDir, 'session.json'), 'utf8')) as { connected?: boolean };
      } catch {
        return {};
      }
    };
    for (let i = 0; i < 100 && !state().connected; i++) await new Promise((res) => setTimeout(res, 50));
    expect(state()).toMatchObject({ connected: true });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

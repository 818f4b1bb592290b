import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBcdForTests, type BcdBuild } from '../../test/bcd-build';
import { signedBy, trustBody, trustGeneration } from '../../test/trust-fixture';
import { FakeGateway, joinedNode, NODE } from '../../test/trust-gateway';
import { formatConfigToml } from './config-toml';

// The built bcd (one executable) against a gateway whose session events the test signs with real keys.
const old = trustGeneration();
const next = trustGeneration();
let bcd: BcdBuild;
let root: string;
let gateway: FakeGateway;
const children: ChildProcess[] = [];

beforeAll(async () => {
  bcd = await buildBcdForTests();
  root = mkdtempSync(path.join(tmpdir(), 'bcd-trust-'));
  gateway = new FakeGateway(old);
  await gateway.start(old);
  gateway.wellKnown = { join: { signingCertificate: old.signingCertificate, next: { signingCertificate: next.signingCertificate } } };
  // The first session gets a forged set, then the real one signed by the pinned key.
  gateway.events = (hello) =>
    hello === 0
      ? [
          ['trust', signedBy(trustBody(NODE, 9, [next]), [next])],
          ['trust', signedBy(trustBody(NODE, 2, [next, old]), [old])],
        ]
      : [];
  mkdirSync(path.join(root, 'etc/bcd'), { recursive: true });
  writeFileSync(
    path.join(root, 'etc/bcd/config.toml'),
    formatConfigToml({
      gatewayUrl: gateway.url,
      site: 'site_trust1',
      servingCaSpkiPin: old.servingCaPin,
      joinSigningKeyPin: old.signingPin,
      joinEncryptionKeyPin: old.encryptionPin,
    }),
    { mode: 0o600 },
  );
  await joinedNode(path.join(root, 'var/lib/bcd'), old);
}, 600_000);
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await gateway?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
});

const env = () => ({ ...process.env, BCD_ROOT: root, BETTER_COMPUTE_SESSION_START_JITTER_SECONDS: '0' });

function node() {
  const child = spawn(bcd.binary, ['node'], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const out: string[] = [];
  child.stdout!.on('data', (chunk: Buffer) => out.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  return { child, out };
}

const until = async (condition: () => boolean | Promise<boolean>, what: string, out: string[]) => {
  for (let i = 0; i < 600; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}; bcd said: ${out.join(' | ')}`);
};

const trustFile = () => path.join(root, 'var/lib/bcd/trust.json');
const held = () =>
  readFile(trustFile(), 'utf8').then(
    (text) => (JSON.parse(text) as { version: number }).version,
    () => 0,
  );

describe('bcd node and trust rotation', () => {
  it('stores a trust event in trust.json (0600), ignores a forged one, reports the version in Hello and doctor', async () => {
    const first = node();
    await until(async () => (await held()) === 2, 'trust.json at version 2', first.out);
    expect(gateway.hellos[0]!.trustVersion).toBe(0);
    expect((await stat(trustFile())).mode & 0o777).toBe(0o600);
    expect(first.out).toContain('agent: ignored a trust set from trust event: the envelope is not signed by a trusted join signing key');
    expect(first.out.join('\n')).not.toContain(signedBy(trustBody(NODE, 9, [next]), [next]).body.slice(0, 40));
    first.child.kill('SIGTERM');
    await new Promise((resolve) => first.child.once('exit', resolve));

    // A restart loads the set: Hello reports it.
    const second = node();
    await until(() => gateway.hellos.length === 2, 'a second Hello', second.out);
    expect(gateway.hellos[1]!.trustVersion).toBe(2);
    second.child.kill('SIGTERM');
    await new Promise((resolve) => second.child.once('exit', resolve));

    const doctor = await promisify(execFile)(bcd.binary, ['doctor'], { env: env() }).catch((error: { stdout: string }) => error);
    const line = doctor.stdout.split('\n').find((l) => l.includes(' trust '));
    expect(line).toMatch(/^ok {3}trust {5}version 2 \(/);
    expect(line).toContain(`serving CA pins ${next.servingCaPin}, ${old.servingCaPin}`);
  });
});

import { spawn, type ChildProcess } from 'node:child_process';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMAND_KINDS } from '../../protocol/command-wire';
import { signEnvelope } from '../../protocol/envelope';
import { buildBcdForTests, type BcdBuild } from '../../test/bcd-build';
import { signedBy, trustBody, trustGeneration } from '../../test/trust-fixture';
import { FakeGateway, joinedNode, NODE } from '../../test/trust-gateway';
import { TrustStore } from '../trust/store';
import { formatConfigToml } from './config-toml';

// The built bcd (one executable) running commands its test gateway signs with a real command-signing key.
const keys = trustGeneration();
const stranger = trustGeneration();
let bcd: BcdBuild;
let root: string;
let gateway: FakeGateway;
let child: ChildProcess | undefined;

const command = (n: number, by = keys) => {
  const body = {
    status: 'command',
    commandId: `cmd_${n.toString(16).padStart(24, '0')}`,
    nodeId: NODE,
    kind: 'bcd.doctor',
    args: {},
    notAfter: Math.floor(Date.now() / 1000) + 600,
  };
  return { body, envelope: signEnvelope(body, createPrivateKey(by.bundle.commandCa.privateKeyPem)) };
};
const good = command(0xb001);
const forged = command(0xb002, stranger);

beforeAll(async () => {
  bcd = await buildBcdForTests();
  root = mkdtempSync(path.join(tmpdir(), 'bcd-commands-'));
  gateway = new FakeGateway(keys);
  await gateway.start(keys);
  gateway.events = (hello) =>
    hello === 0
      ? [
          ['command', forged.envelope],
          ['command', good.envelope],
        ]
      : [];
  mkdirSync(path.join(root, 'etc/bcd'), { recursive: true });
  const install = { servingCaPin: keys.servingCaPin, joinSigningKeyPin: keys.signingPin, joinEncryptionKeyPin: keys.encryptionPin };
  writeFileSync(
    path.join(root, 'etc/bcd/config.toml'),
    formatConfigToml({
      gatewayUrl: gateway.url,
      site: 'site_trust1',
      servingCaSpkiPin: keys.servingCaPin,
      joinSigningKeyPin: keys.signingPin,
      joinEncryptionKeyPin: keys.encryptionPin,
    }),
    { mode: 0o600 },
  );
  const identityDir = path.join(root, 'var/lib/bcd');
  await joinedNode(identityDir, keys);
  // The trust set a join answer stores: it holds the command-signing certificate.
  const trust = await TrustStore.open({ dir: identityDir, install, log: () => {} });
  trust.learnSigningKey(createPublicKey(keys.signingKey));
  expect(await trust.acceptEvent(signedBy(trustBody(NODE, 2, [keys]), [keys]), NODE)).toBe(true);
}, 600_000);
afterAll(async () => {
  child?.kill('SIGKILL');
  await gateway?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('bcd node and commands', () => {
  it('reports every kind in Hello, answers bcd.doctor with its --json report, logs a forged command', async () => {
    child = spawn(bcd.binary, ['node'], {
      env: { ...process.env, BCD_ROOT: root, BETTER_COMPUTE_SESSION_START_JITTER_SECONDS: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: string[] = [];
    child.stdout!.on('data', (chunk: Buffer) => out.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
    for (let i = 0; i < 600 && gateway.results.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(gateway.results, out.join(' | ')).toHaveLength(1);
    expect(gateway.hellos[0]!.commandKinds).toEqual([...COMMAND_KINDS]);
    const { commandId, body } = gateway.results[0]!;
    expect(commandId).toBe(good.body.commandId);
    const { status, output } = body as { status: string; output: { version: string; checks: Array<{ name: string; ok: boolean }> } };
    expect(status).toBe('succeeded');
    expect(output.version).toMatch(/^bcd /);
    expect(output.checks.map((c) => c.name)).toEqual(expect.arrayContaining(['config', 'identity', 'key', 'trust', 'gateway', 'session']));
    expect(output.checks.find((c) => c.name === 'identity')!.ok).toBe(true);
    expect(out).toContain('agent: ignored a command event: the envelope is not signed by a command-signing key of the trust set');
    expect(out.join('\n')).not.toContain(forged.body.commandId);
  });
});

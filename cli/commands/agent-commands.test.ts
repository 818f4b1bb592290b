import { spawn } from 'node:child_process';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { COMMAND_KINDS } from '../../protocol/command-wire';
import { signEnvelope } from '../../protocol/envelope';
import { signedBy, trustBody, trustGeneration } from '../../test/trust-fixture';
import { DOMAIN, FakeGateway, joinedNode, NODE } from '../../test/trust-gateway';
import { TrustStore } from '../../agent/trust/store';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const keys = trustGeneration(DOMAIN);
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('better-compute agent run', () => {
  it('says in Hello that it runs every kind, and answers bcd.doctor with agent doctor’s checks', { timeout: 60_000 }, async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'agent-run-commands-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await joinedNode(dir, keys);
    const install = { servingCaPin: keys.servingCaPin, joinSigningKeyPin: keys.signingPin };
    const trust = await TrustStore.open({ dir, install, log: () => {} });
    trust.learnSigningKey(createPublicKey(keys.signingKey));
    expect(await trust.acceptEvent(signedBy(trustBody(NODE, 2, [keys]), [keys]), NODE)).toBe(true);
    const g = new FakeGateway(keys);
    await g.start(keys);
    cleanups.push(() => g.stop());
    const commandId = 'cmd_00000000000000000000a001';
    const body = {
      status: 'command',
      commandId,
      nodeId: NODE,
      kind: 'bcd.doctor',
      args: {},
      notAfter: Math.floor(Date.now() / 1000) + 300,
    };
    g.events = (hello) => (hello === 0 ? [['command', signEnvelope(body, createPrivateKey(keys.bundle.commandCa.privateKeyPem))]] : []);

    const child = spawn(
      process.execPath,
      [
        'bin/better-compute.mjs',
        'agent',
        'run',
        '--identity-dir',
        dir,
        '--gateway-url',
        g.url,
        '--serving-ca-pin',
        keys.servingCaPin,
        '--gateway-server-name',
        '127.0.0.1',
        '--join-signing-key-pin',
        keys.signingPin,
      ],
      { cwd: ROOT, env: { ...process.env, NODE_NO_WARNINGS: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise((resolve) => child.once('close', resolve));
    cleanups.push(() => (child.kill('SIGTERM'), exited));
    for (let i = 0; i < 1200 && g.results.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(g.results, stderr).toHaveLength(1);
    expect(g.hellos[0]!.commandKinds).toEqual([...COMMAND_KINDS]);
    const result = g.results[0]!;
    expect(result.commandId).toBe(commandId);
    const { status, output } = result.body as { status: string; output: { checks: Array<{ name: string; ok: boolean }> } };
    expect(status).toBe('succeeded');
    expect(output.checks.map((c) => c.name)).toEqual(['identity', 'expiry', 'gateway', 'trust', 'session']);
    expect(output.checks.find((c) => c.name === 'identity')!.ok).toBe(true);
  });
});

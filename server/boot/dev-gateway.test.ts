import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectGateway } from '../../agent/renew/gateway-client';
import { findFreePort } from '../db/embedded';
import { gatewayFilesIn, writeGatewayFiles } from '../gateway/files';
import { createPkiBundle } from '../pki/bundle/bundle';
import { issueGatewayCertificate } from '../pki/issuance/gateway';
import { installPins } from '../pki/pins-summary';
import { startGatewayProcess } from './dev-gateway';

const listener = (port: number) =>
  execFileSync('sh', ['-c', `ss -ltnp 'sport = :${port}' | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2`])
    .toString()
    .trim();
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function probe(target: Parameters<typeof connectGateway>[0], deadline: number): Promise<void> {
  for (;;) {
    try {
      (await connectGateway(target, undefined, 2000)).destroy();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** A new PKI's gateway files (a serving chain for localhost and 127.0.0.1) in a new directory, and a free port. */
async function gatewayFiles() {
  const bundle = createPkiBundle({ trustDomain: 'dev.example.com' });
  const dir = await mkdtemp(path.join(tmpdir(), 'bc-gw-'));
  const cert = issueGatewayCertificate(bundle, { sans: ['localhost', '127.0.0.1'] });
  await writeGatewayFiles(gatewayFilesIn(dir), {
    chainPem: cert.chainPem,
    keyPem: cert.privateKeyPem,
    nodeCaPem: bundle.nodeCa.certificatePem,
  });
  return { bundle, dir, port: await findFreePort() };
}

describe('the gateway process npm start runs', () => {
  it('serves the pinned serving chain for localhost, and comes back after it is killed', async () => {
    const { bundle, dir, port } = await gatewayFiles();
    const lines: string[] = [];
    const stop = startGatewayProcess({ dir, port, apiUrl: 'http://127.0.0.1:9', say: (l) => lines.push(l) });
    const target = { gatewayUrl: `https://127.0.0.1:${port}`, servingCaPin: installPins(bundle).servingCaPin };
    try {
      await probe(target, Date.now() + 30_000);
      await probe({ ...target, gatewayUrl: `https://localhost:${port}` }, Date.now() + 5_000);
      const pid = execFileSync('sh', ['-c', `ss -ltnp 'sport = :${port}' | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2`])
        .toString()
        .trim();
      expect(pid).toMatch(/^\d+$/);
      process.kill(Number(pid), 'SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 300));
      await probe(target, Date.now() + 30_000);
      expect(lines.some((l) => l.includes('restarting'))).toBe(true);
    } finally {
      await stop();
    }
  }, 90_000);

  it('exits when the server that started it is killed, so the next start gets its port', async () => {
    const { bundle, dir, port } = await gatewayFiles();
    const parent = spawn(process.execPath, ['--import', 'tsx', 'test/gateway-parent.ts'], {
      cwd: path.resolve(__dirname, '../..'),
      env: { ...process.env, BETTER_COMPUTE_GATEWAY_DIR: dir, BETTER_COMPUTE_GATEWAY_PORT: String(port) },
      stdio: 'ignore',
    });
    let gateway = 0;
    try {
      await probe({ gatewayUrl: `https://127.0.0.1:${port}`, servingCaPin: installPins(bundle).servingCaPin }, Date.now() + 30_000);
      gateway = Number(listener(port));
      expect(gateway).toBeGreaterThan(0);
      expect(gateway).not.toBe(parent.pid);
      parent.kill('SIGKILL');
      const until = Date.now() + 15_000;
      while (alive(gateway) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(alive(gateway)).toBe(false);
      expect(listener(port)).toBe('');
    } finally {
      parent.kill('SIGKILL');
      if (gateway && alive(gateway)) process.kill(gateway, 'SIGKILL');
    }
  }, 90_000);
});

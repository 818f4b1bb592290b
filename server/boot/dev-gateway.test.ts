import { execFileSync } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectGateway } from '../../agent/renew/gateway-client';
import { findFreePort } from '../db/embedded';
import { gatewayFilesIn, writeGatewayFiles } from '../gateway/files';
import { createPkiBundle } from '../pki/bundle';
import { issueGatewayCertificate } from '../pki/gateway';
import { installPins } from '../pki/pins-summary';
import { startGatewayProcess } from './dev-gateway';

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

describe('the gateway process npm start runs', () => {
  it('serves the pinned serving chain for localhost, and comes back after it is killed', async () => {
    const bundle = createPkiBundle({ trustDomain: 'dev.example.com' });
    const dir = await mkdtemp(path.join(tmpdir(), 'bc-gw-'));
    const cert = issueGatewayCertificate(bundle, { sans: ['localhost', '127.0.0.1'] });
    await writeGatewayFiles(gatewayFilesIn(dir), { chainPem: cert.chainPem, keyPem: cert.privateKeyPem, nodeCaPem: bundle.nodeCa.certificatePem });
    const port = await findFreePort();
    const lines: string[] = [];
    const stop = startGatewayProcess({ dir, port, apiUrl: 'http://127.0.0.1:9', say: (l) => lines.push(l) });
    const target = { gatewayUrl: `https://127.0.0.1:${port}`, servingCaPin: installPins(bundle).servingCaPin };
    try {
      await probe(target, Date.now() + 30_000);
      await probe({ ...target, gatewayUrl: `https://localhost:${port}` }, Date.now() + 5_000);
      const pid = execFileSync('sh', ['-c', `ss -ltnp 'sport = :${port}' | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2`]).toString().trim();
      expect(pid).toMatch(/^\d+$/);
      process.kill(Number(pid), 'SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 300));
      await probe(target, Date.now() + 30_000);
      expect(lines.some((l) => l.includes('restarting'))).toBe(true);
    } finally {
      await stop();
    }
  }, 90_000);
});

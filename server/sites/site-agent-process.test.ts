import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatConfigToml } from '../../agent/bcd/config-toml';
import { pinnedFetch } from '../../agent/bcd/pinned-fetch';
import { simulateSiteBoots } from '../../agent/sim/site-boot';
import { newMachineRoot } from '../../test/bcd-build';
import { testDb } from '../../test/db';
import { createTestTenant, findSecretLeak } from '../../test/fixtures';
import { reservePort, spawnGateway, type SpawnedGateway } from '../../test/gateway-process';
import { createRenewHarness, type RenewHarness } from '../../test/renew-harness';
import { mintSiteToken } from '../../test/site-agent-harness';

// A real `bcd site` process (agent/bcd/main.ts under tsx) joins with a site token through a real gateway process,
// holds its session, and serves simulated PXE boots: each lease's ramdisk fetches its token once and joins
// through the discovery attestor into the queue, vouched for by the site agent.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let r: RenewHarness;
let gateway: SpawnedGateway;
const cleanup: (() => unknown)[] = [];
beforeAll(async () => {
  // Certificates of 60 s, so the site agent renews on its session within the test.
  r = await createRenewHarness({
    env: { BETTER_COMPUTE_SECRET: 'site-agent-process-secret-0123456789abcdefghijkl', BETTER_COMPUTE_CERT_TTL_SECONDS: '60' },
  });
  const credentials = {
    chainPem: r.gatewayCert.chainPem,
    keyPem: r.gatewayCert.privateKeyPem,
    nodeCaPem: r.h.bundle.nodeCa.certificatePem,
  };
  gateway = await spawnGateway({ credentials, apiUrl: r.apiUrl });
});
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
  await gateway?.stop();
  await r?.close();
});
const db = testDb;

/** Starts `bcd site`; resolves once it listens for leases, with everything it printed so far kept in `lines`. */
async function startSiteAgent(siteDir: string, tokenFile: string, leasePort: number, env: Record<string, string | undefined>) {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(ROOT, 'agent/bcd/main.ts'),
      'site',
      '--site-dir',
      siteDir,
      '--token-file',
      tokenFile,
      '--lease-listen',
      `127.0.0.1:${leasePort}`,
    ],
    { cwd: ROOT, env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const take = (chunk: Buffer) => {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      if (lines.some((l) => l.startsWith('site: leases on'))) resolve();
    };
    child.stdout!.on('data', take);
    child.stderr!.on('data', take);
    void exited.then((code) => reject(new Error(`bcd site exited (${code}): ${lines.join('\n')}`)));
  });
  return { child, lines, exited };
}

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, lines: string[], timeoutMs = 60_000): Promise<T> {
  for (const start = Date.now(); Date.now() - start < timeoutMs; await new Promise((s) => setTimeout(s, 200))) {
    const value = await probe();
    if (value) return value;
  }
  throw new Error(`timed out waiting for ${what}; bcd site printed:\n${lines.join('\n')}`);
}

describe('bcd site', () => {
  it('joins with a site token, holds its session, and its boots join the queue vouched for by it', async () => {
    const t = await createTestTenant(db());
    const siteDir = mkdtempSync(path.join(tmpdir(), 'bcd-site-'));
    const machine = newMachineRoot();
    cleanup.push(
      () => rmSync(siteDir, { recursive: true, force: true }),
      () => rmSync(machine, { recursive: true, force: true }),
    );
    const pins = {
      servingCaSpkiPin: r.servingCaPin,
      joinSigningKeyPin: r.h.crypto.signingKeyPin,
      joinEncryptionKeyPin: r.h.crypto.encryptionKeyPin,
    };
    writeFileSync(path.join(siteDir, 'config.toml'), formatConfigToml({ gatewayUrl: gateway.url, site: t.siteId, ...pins }));
    writeFileSync(path.join(siteDir, 'join-encryption.jwk'), JSON.stringify(r.h.crypto.encryptionPublicJwk));
    const token = await mintSiteToken(t);
    const tokenFile = path.join(siteDir, 'site-token');
    writeFileSync(tokenFile, token, { mode: 0o400 });
    const leasePort = await reservePort();
    const env = { PATH: process.env.PATH, BCD_ROOT: machine, BETTER_COMPUTE_SESSION_START_JITTER_SECONDS: '0' };
    const agent = await startSiteAgent(siteDir, tokenFile, leasePort, env);
    cleanup.push(() => agent.child.kill('SIGKILL'));

    const node = await until('the site agent node', () => db().node.findFirst({ where: { siteId: t.siteId, role: 'site' } }), agent.lines);
    await until('its session', async () => (await db().node.findUnique({ where: { id: node.id } }))?.connectedSince, agent.lines);
    expect(agent.lines.some((l) => l.startsWith(`joined: site agent ${node.id}`))).toBe(true);

    const leaseUrl = `http://127.0.0.1:${leasePort}`;
    const fetch = pinnedFetch({ servingCaPin: r.servingCaPin });
    const boots = await simulateSiteBoots({ leaseUrl, serverUrl: gateway.url, trust: r.h.trust, count: 3, bootLeaseEpoch: 9, fetch });
    expect(boots.map((b) => b.failure)).toEqual([undefined, undefined, undefined]);
    const requests = await db().joinRequest.findMany({ where: { siteId: t.siteId, state: 'pending' } });
    expect(requests.map((q) => q.mac).sort()).toEqual(boots.map((b) => b.mac).sort());
    expect(requests.every((q) => q.vouchedBy === `node:${node.id}` && q.bootLeaseEpoch === 9n && q.attestor === 'discovery')).toBe(true);
    // A token is handed to its ramdisk once.
    expect((await globalThis.fetch(`${leaseUrl}/v1/boot/${boots[0]!.mac}/token`)).status).toBe(404);
    // The same lease again (its ramdisk waits in the queue: the token is not spent) is a retry: the same token,
    // not a second one, and not handed out again.
    const again = await globalThis.fetch(`${leaseUrl}/v1/leases`, {
      method: 'POST',
      body: JSON.stringify({ mac: boots[1]!.mac, ip: '127.0.0.1', bootLeaseEpoch: 9 }),
    });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ mac: boots[1]!.mac, tokenId: boots[1]!.tokenId });
    expect((await globalThis.fetch(`${leaseUrl}/v1/boot/${boots[1]!.mac}/token`)).status).toBe(404);
    expect(await db().joinToken.count({ where: { siteId: t.siteId, role: 'discovery' } })).toBe(3);

    // It renews like a node, and mints with the renewed certificate.
    await until('a renewal', async () => (await db().nodeCert.count({ where: { nodeId: node.id } })) >= 2, agent.lines, 120_000);
    const after = await simulateSiteBoots({ leaseUrl, serverUrl: gateway.url, trust: r.h.trust, count: 1, firstIndex: 3, fetch });
    expect(after.map((b) => b.failure)).toEqual([undefined]);

    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
    const tokens = await db().joinToken.findMany({ where: { siteId: t.siteId } });
    expect(tokens).toHaveLength(5);
    expect(findSecretLeak([token], [...agent.lines, ...gateway.lines])).toBeUndefined();
  }, 180_000);
});

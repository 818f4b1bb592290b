import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBcdForTests, newMachineRoot, removeMachineRoots, run, type BcdBuild } from '../../test/bcd-build';
import { reservePort, spawnGateway, type SpawnedGateway } from '../../test/gateway-process';
import { bcdEnv, bcdNodeOf } from '../../test/rotation/fleet-agents';
import {
  createServerDatabase,
  defaultPool,
  newServerSecret,
  startServerProcess,
  type ServerDatabase,
  type ServerProcess,
} from '../../test/server-process';
import { principalOf } from '../authz/principal';
import { bootstrapFirstStart } from '../boot/bootstrap';
import { loadPki } from '../pki/bundle/store';
import { issueGatewayCertificate } from '../pki/issuance/gateway';
import { installPins } from '../pki/pins-summary';
import { issueJoinToken } from '../tokens/issue';
import { generateInstallScript } from './generate';

// IPv6 literal URLs end to end, on ::1: the production gateway listening on [::1] (BETTER_COMPUTE_GATEWAY_HOST)
// with a certificate for the address, the well-known document naming https://[::1]:<port>, the generated install
// script with bracketed base and gateway URLs run by sh, and the built bcd joining, renewing and bootstrapping
// from `--server http://[::1]:<port>`. The test API server listens on IPv4 only, so the base URL is a TCP
// forwarder on [::1] in front of it.

const secret = newServerSecret();
let bcd: BcdBuild;
let database: ServerDatabase | undefined;
let server: ServerProcess | undefined;
let gateway: SpawnedGateway | undefined;
let forwarder: net.Server | undefined;
let gatewayUrl: string;
let baseUrl: string;
let pool: { id: string; ownerTenantId: string; siteId: string };
let pins: ReturnType<typeof installPins>;

beforeAll(async () => {
  const gatewayPort = await reservePort();
  gatewayUrl = `https://[::1]:${gatewayPort}`;
  [bcd, database] = await Promise.all([buildBcdForTests(), createServerDatabase('ipv6_join')]);
  await bootstrapFirstStart(database.db, { secret, trustDomain: 'ipv6.example.com' });
  server = await startServerProcess({
    databaseUrl: database.url,
    secret,
    env: { BETTER_COMPUTE_GATEWAY_URL: gatewayUrl, BETTER_COMPUTE_DOWNLOADS_DIR: bcd.dir },
  });
  const bundle = await loadPki(database.db, secret);
  pins = installPins(bundle);
  const cert = issueGatewayCertificate(bundle, { sans: ['::1'] });
  gateway = await spawnGateway({
    credentials: { chainPem: cert.chainPem, keyPem: cert.privateKeyPem, nodeCaPem: bundle.nodeCa.certificatePem },
    apiUrl: server.url,
    port: gatewayPort,
    env: { BETTER_COMPUTE_GATEWAY_HOST: '::1' },
  });
  const apiPort = server.port;
  forwarder = net.createServer((socket) => {
    const api = net.connect(apiPort, '127.0.0.1');
    socket.pipe(api).pipe(socket);
    for (const end of [socket, api]) end.on('error', () => (socket.destroy(), api.destroy()));
  });
  await new Promise<void>((resolve) => forwarder!.listen(0, '::1', resolve));
  baseUrl = `http://[::1]:${(forwarder.address() as AddressInfo).port}`;
  pool = await defaultPool(database.db);
}, 300_000);

afterAll(async () => {
  forwarder?.close();
  await gateway?.stop();
  await server?.stop();
  await database?.close();
  if (bcd) rmSync(bcd.dir, { recursive: true, force: true });
  removeMachineRoots();
});

const newToken = async () =>
  (
    await issueJoinToken(database!.db, {
      tenantId: pool.ownerTenantId,
      poolId: pool.id,
      siteId: pool.siteId,
      role: 'node',
      ttlSeconds: 3600,
      maxUses: 1,
      createdBy: 'test:ipv6',
    })
  ).token!;
/** How many joins the gateway relayed with a 200 so far. */
const joinsThroughGateway = () =>
  gateway!.lines
    .filter((line) => line.startsWith('{"gateway":"call"'))
    .map((line) => JSON.parse(line) as { path: string; status: number })
    .filter((call) => call.path === '/api/compute/v1/join' && call.status === 200).length;
const configOf = (root: string) => readFileSync(path.join(root, 'etc/bcd/config.toml'), 'utf8');

describe('IPv6 literal URLs on ::1, with the built bcd and the production gateway', () => {
  it('the well-known document names the gateway https://[::1]:<port> with the server name ::1', async () => {
    const doc = (await (await fetch(`${server!.url}/api/compute/.well-known/better-compute`)).json()) as {
      gateway: { url: string; serverName: string };
    };
    expect(doc.gateway).toMatchObject({ url: gatewayUrl, serverName: '::1' });
  });

  it(
    'the install script downloads from [::1], joins through the gateway on [::1], and bcd renews there',
    { timeout: 240_000 },
    async () => {
      process.env.BETTER_COMPUTE_SECRET = secret; // generateInstallScript opens the PKI as the server does
      const admin = principalOf('local', 'ipv6-test', [[pool.ownerTenantId, 'admin']]);
      const { script } = await generateInstallScript(
        database!.db,
        admin,
        { tenantId: pool.ownerTenantId, poolId: pool.id, gatewayUrl, baseUrl, bcdVersion: bcd.version, sha256: { amd64: bcd.sha256 } },
        bcd.dir,
      );
      const file = path.join(mkdtempSync(path.join(tmpdir(), 'bc-ipv6-')), 'install-bcd.sh');
      writeFileSync(file, script);
      const root = newMachineRoot();
      const before = joinsThroughGateway();
      const installed = await run('sh', [file], { env: bcdEnv(root), input: `${await newToken()}\n` });
      expect(installed.code, installed.stdout + installed.stderr).toBe(0);
      expect(installed.stdout).toContain(`downloading ${baseUrl}/api/compute/downloads/bcd/`);
      expect(joinsThroughGateway()).toBe(before + 1);
      expect(configOf(root)).toContain(`gateway_url = "${gatewayUrl}"\n`);
      const bin = path.join(root, 'usr/local/bin/bcd');
      const renewed = await run(bin, ['node', '--once'], { env: bcdEnv(root) });
      expect(renewed.code, renewed.stdout + renewed.stderr).toBe(0);
      const doctor = await run(bin, ['doctor'], { env: bcdEnv(root) });
      expect(doctor.code, doctor.stdout).toBe(0);
      // bcd node, as bcd.service runs it, holds its session with the gateway on [::1].
      const node = await bcdNodeOf(root);
      node.start();
      try {
        // The agent logs the session once welcomed (after the API wrote its row).
        await expect
          .poll(() => node.lines.some((line) => line.includes(`open through ${gatewayUrl}`)), {
            timeout: 60_000,
            interval: 250,
            message: node.lines.join('\n'),
          })
          .toBe(true);
        expect(await database!.db.nodeSession.count({ where: { nodeId: node.nodeId } })).toBeGreaterThan(0);
      } finally {
        expect(await node.stop()).toBe(0);
      }
    },
  );

  it('bcd join --server http://[::1]:<port> reads the document there and joins through the gateway', { timeout: 120_000 }, async () => {
    const root = newMachineRoot();
    const pinArgs = [
      '--serving-ca-pin',
      pins.servingCaPin,
      '--join-signing-pin',
      pins.joinSigningKeyPin,
      '--join-encryption-pin',
      pins.joinEncryptionKeyPin,
    ];
    const bare = await run(bcd.binary, ['join', '--server', `http://::1:${new URL(baseUrl).port}`, ...pinArgs], {
      env: bcdEnv(root),
      input: `${await newToken()}\n`,
    });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/write an IPv6 address in brackets/);

    const before = joinsThroughGateway();
    const joined = await run(bcd.binary, ['join', '--server', baseUrl, ...pinArgs], { env: bcdEnv(root), input: `${await newToken()}\n` });
    expect(joined.code, joined.stdout + joined.stderr).toBe(0);
    expect(joinsThroughGateway()).toBe(before + 1);
    expect(configOf(root)).toContain(`gateway_url = "${gatewayUrl}"\n`);
    const renewed = await run(bcd.binary, ['node', '--once'], { env: bcdEnv(root) });
    expect(renewed.code, renewed.stdout + renewed.stderr).toBe(0);
  });
});

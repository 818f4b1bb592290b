import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBcdForTests, newMachineRoot, removeMachineRoots, run, type BcdBuild } from '../../test/bcd-build';
import { spawnGateway, type SpawnedGateway } from '../../test/gateway-process';
import { canMakeNetworkNamespaces, makeGatewayOnlyNetwork, type GatewayOnlyNetwork } from '../../test/netns';
import { bcdEnv } from '../../test/rotation/fleet-agents';
import {
  createServerDatabase,
  defaultPool,
  newServerSecret,
  startServerProcess,
  type ServerDatabase,
  type ServerProcess,
} from '../../test/server-process';
import { createCaller } from '../api/root';
import { principalOf } from '../authz/principal';
import { bootstrapFirstStart } from '../boot/bootstrap';
import { loadPki } from '../pki/bundle/store';
import { issueGatewayCertificate } from '../pki/issuance/gateway';
import { installPins } from '../pki/pins-summary';
import { issueJoinToken } from '../tokens/issue';
import { generateInstallScript } from './generate';

// A machine network that reaches only the gateway (joining.md, "The join flow": bcd talks to the gateway, the
// gateway to JoinService). Real network namespaces, as root: the API and PostgreSQL in this one, the gateway
// process in a namespace of its own linked to this one, the machine in a third linked only to the gateway's,
// which forwards nothing. The built bcd is downloaded by the generated install script from a mirror on the
// machine's own loopback (the one thing the script needs besides the gateway), joins, and then `bcd node`
// holds its session and renews, all in the machine's namespace.

const secret = newServerSecret();
const CERT_TTL_SECONDS = 60;
const MIRROR_PORT = 8080;
const GATEWAY_PORT = 8443;
const isolated = canMakeNetworkNamespaces();

let net: GatewayOnlyNetwork | undefined;
let bcd: BcdBuild;
let database: ServerDatabase | undefined;
let server: ServerProcess | undefined;
let gateway: SpawnedGateway | undefined;
let mirror: ChildProcess | undefined;
let pool: { id: string; ownerTenantId: string; siteId: string };
let gatewayUrl: string;
let pins: ReturnType<typeof installPins>;
const children = new Set<ChildProcess>();

/** A static file server for the downloads, in the machine's namespace on its own 127.0.0.1. */
const MIRROR = `
const http = require('node:http'), fs = require('node:fs'), path = require('node:path');
const [dir, port] = process.argv.slice(1);
http.createServer((req, res) => {
  const m = /^\\/api\\/compute\\/downloads\\/bcd\\/([0-9A-Za-z.-]+)\\/(linux-[a-z0-9]+)$/.exec(req.url);
  if (!m) return res.writeHead(404).end();
  fs.createReadStream(path.join(dir, m[1], m[2])).on('error', () => res.writeHead(404).end()).pipe(res);
}).listen(Number(port), '127.0.0.1', () => console.log('mirror ready'));
`;

beforeAll(async () => {
  if (!isolated) return;
  net = makeGatewayOnlyNetwork();
  gatewayUrl = `https://${net.gatewayAddress}:${GATEWAY_PORT}`;
  [bcd, database] = await Promise.all([buildBcdForTests(), createServerDatabase('gateway_only_join')]);
  await bootstrapFirstStart(database.db, { secret, trustDomain: 'gateway-only.example.com' });
  server = await startServerProcess({
    databaseUrl: database.url,
    secret,
    env: {
      BETTER_COMPUTE_GATEWAY_URL: gatewayUrl,
      BETTER_COMPUTE_DOWNLOADS_DIR: bcd.dir,
      BETTER_COMPUTE_CERT_TTL_SECONDS: String(CERT_TTL_SECONDS),
    },
  });
  const bundle = await loadPki(database.db, secret);
  pins = installPins(bundle);
  const cert = issueGatewayCertificate(bundle, { sans: [net.gatewayAddress] });
  gateway = await spawnGateway({
    credentials: { chainPem: cert.chainPem, keyPem: cert.privateKeyPem, nodeCaPem: bundle.nodeCa.certificatePem },
    // The API listens on every address of this namespace; the gateway reaches it over its link.
    apiUrl: `http://${net.hostAddress}:${server.port}`,
    port: GATEWAY_PORT,
    netns: net.gatewayNs,
  });
  pool = await defaultPool(database.db);
  const [command, args] = net.argv(net.machineNs, process.execPath, ['-e', MIRROR, bcd.dir, String(MIRROR_PORT)]);
  mirror = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: mirror!.stdout! }).on('line', (line) => line === 'mirror ready' && resolve());
    mirror!.once('exit', (code) => reject(new Error(`the mirror exited (${code})`)));
  });
}, 300_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  mirror?.kill();
  await gateway?.stop();
  await server?.stop();
  await database?.close();
  net?.remove();
  if (bcd) rmSync(bcd.dir, { recursive: true, force: true });
  removeMachineRoots();
});

/** curl in namespace `ns`: its exit code (0: an answer came, 7: refused or unreachable, 28: timed out). */
async function curlFrom(ns: string, url: string): Promise<number | null> {
  const [command, args] = net!.argv(ns, 'curl', ['-sk', '-o', '/dev/null', '--max-time', '5', url]);
  return (await run(command, args, { env: { PATH: '/usr/bin:/bin' } as unknown as NodeJS.ProcessEnv })).code;
}

describe.runIf(isolated)('a machine network that reaches only the gateway', () => {
  it('reaches the gateway, and the API on none of its addresses', { timeout: 60_000 }, async () => {
    const wellKnown = '/api/compute/.well-known/better-compute';
    // The API answers from the gateway's side, so what the machine cannot reach is there.
    expect(await curlFrom(net!.gatewayNs, `http://${net!.hostAddress}:${server!.port}${wellKnown}`)).toBe(0);
    for (const address of [net!.hostAddress, '127.0.0.1', net!.gatewayUpAddress])
      expect(await curlFrom(net!.machineNs, `http://${address}:${server!.port}${wellKnown}`), address).not.toBe(0);
    expect(await curlFrom(net!.machineNs, `${gatewayUrl}${wellKnown}`)).toBe(0);
  });

  it('installs with the script, joins through the gateway, then bcd node holds its session and renews', { timeout: 300_000 }, async () => {
    process.env.BETTER_COMPUTE_SECRET = secret; // generateInstallScript opens the PKI as the server does
    const admin = principalOf('local', 'gateway-only-test', [[pool.ownerTenantId, 'admin']]);
    const { script } = await generateInstallScript(
      database!.db,
      admin,
      {
        tenantId: pool.ownerTenantId,
        poolId: pool.id,
        gatewayUrl,
        baseUrl: `http://127.0.0.1:${MIRROR_PORT}`,
        bcdVersion: bcd.version,
        sha256: { amd64: bcd.sha256 },
      },
      bcd.dir,
    );
    const scriptFile = path.join(mkdtempSync(path.join(tmpdir(), 'bc-gw-only-')), 'install-bcd.sh');
    writeFileSync(scriptFile, script);
    const { token } = await issueJoinToken(database!.db, {
      tenantId: pool.ownerTenantId,
      poolId: pool.id,
      siteId: pool.siteId,
      role: 'node',
      ttlSeconds: 3600,
      maxUses: 1,
      createdBy: 'test:gateway-only',
    });
    const root = newMachineRoot();
    const [command, args] = net!.argv(net!.machineNs, 'sh', [scriptFile]);
    const installed = await run(command, args, { env: bcdEnv(root), input: `${token}\n` });
    expect(installed.code, installed.stdout + installed.stderr).toBe(0);
    expect(installed.stdout).toContain(`through the gateway ${gatewayUrl}`);

    // The join went through the gateway: its call log holds the well-known document and the join.
    const calls = () =>
      gateway!.lines
        .filter((line) => line.startsWith('{"gateway":"call"'))
        .map((line) => JSON.parse(line) as { path: string; status: number });
    for (const called of ['/api/compute/.well-known/better-compute', '/api/compute/v1/join'])
      expect(
        calls().some((c) => c.path === called && c.status === 200),
        called,
      ).toBe(true);
    const identityFile = path.join(root, 'var/lib/bcd/identity.json');
    const { nodeId } = JSON.parse(readFileSync(identityFile, 'utf8')) as { nodeId: string };
    expect(await database!.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ poolId: pool.id, state: 'adopted' });

    // bcd node, as bcd.service runs it, in the machine's namespace.
    const lines: string[] = [];
    const [bcdCommand, bcdArgs] = net!.argv(net!.machineNs, path.join(root, 'usr/local/bin/bcd'), ['node']);
    const node = spawn(bcdCommand, bcdArgs, { env: bcdEnv(root), stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(node);
    for (const stream of [node.stdout, node.stderr]) createInterface({ input: stream }).on('line', (line) => lines.push(line));
    const sessions = () => database!.db.nodeSession.count({ where: { nodeId } });
    try {
      await expect.poll(sessions, { timeout: 60_000, interval: 250, message: lines.join('\n') }).toBeGreaterThan(0);
      const joinedCertificate = readFileSync(identityFile, 'utf8');
      // The certificate lives 60 s: the renewal comes on the session, through the gateway.
      await expect
        .poll(() => readFileSync(identityFile, 'utf8') !== joinedCertificate, {
          timeout: 120_000,
          interval: 500,
          message: lines.join('\n'),
        })
        .toBe(true);
      expect(lines.join('\n')).not.toMatch(/renewal failed|could not open the session|could not move the session/);
      // Still held after the renewal.
      await expect.poll(sessions, { timeout: 30_000, interval: 250, message: lines.join('\n') }).toBeGreaterThan(0);
      expect(node.exitCode).toBeNull();
    } finally {
      node.kill('SIGTERM');
      children.delete(node);
    }
  });
  it(
    'a tpm join makes every round through the gateway (a swtpm in the machine namespace; an operator approves)',
    { timeout: 180_000 },
    async () => {
      // The site queues unknown EKs, so the test needs no access to the machine's TPM: it approves the request.
      await database!.db.site.update({ where: { id: pool.siteId }, data: { tpm: { enrollment: true } } });
      const state = mkdtempSync(path.join(tmpdir(), 'bc-gw-only-tpm-'));
      const [swtpmCommand, swtpmArgs] = net!.argv(net!.machineNs, 'swtpm', [
        'socket',
        '--tpm2',
        '--tpmstate',
        `dir=${state}`,
        '--server',
        'type=tcp,port=2321,bindaddr=127.0.0.1',
        '--ctrl',
        'type=tcp,port=2322,bindaddr=127.0.0.1',
        '--flags',
        'not-need-init,startup-clear',
      ]);
      const swtpm = spawn(swtpmCommand, swtpmArgs, { stdio: 'ignore' });
      children.add(swtpm);
      try {
        const probe = net!.argv(net!.machineNs, process.execPath, [
          '-e',
          "require('node:net').connect(2321, '127.0.0.1').on('connect', () => process.exit(0)).on('error', () => process.exit(1))",
        ]);
        await expect
          .poll(async () => (await run(probe[0], probe[1], { env: {} as NodeJS.ProcessEnv })).code, { timeout: 10_000, interval: 200 })
          .toBe(0);
        const root = newMachineRoot();
        mkdirSync(path.join(root, 'etc/bcd'), { recursive: true });
        writeFileSync(
          path.join(root, 'etc/bcd/config.toml'),
          [
            `gateway_url = "${gatewayUrl}"`,
            `site = "${pool.siteId}"`,
            `serving_ca_spki_pin = "${pins.servingCaPin}"`,
            `join_signing_key_pin = "${pins.joinSigningKeyPin}"`,
            `join_encryption_key_pin = "${pins.joinEncryptionKeyPin}"`,
            '',
          ].join('\n'),
          { mode: 0o600 },
        );
        const joinsBefore = gateway!.lines.filter((line) => line.includes('"path":"/api/compute/v1/join"')).length;
        const [command, args] = net!.argv(net!.machineNs, bcd.binary, [
          'join',
          '--attestor',
          'tpm',
          '--tpm',
          'swtpm:127.0.0.1:2321',
          '--no-wait',
        ]);
        const waiting = await run(command, args, { env: bcdEnv(root) });
        expect(waiting.code, waiting.stdout + waiting.stderr).toBe(3);
        const requestId = /waiting for approval: join request (jreq_\S+);/.exec(waiting.stdout)![1]!;
        const admin = principalOf('local', 'gateway-only-test', [[pool.ownerTenantId, 'admin']]);
        await createCaller({ db: database!.db, principal: admin }).joinRequests.approve({
          tenantId: pool.ownerTenantId,
          poolId: pool.id,
          requestId,
        });
        const joined = await run(command, args, { env: bcdEnv(root) });
        expect(joined.code, joined.stdout + joined.stderr).toBe(0);
        expect(joined.stdout).toMatch(/^joined: node \S+ .*its key is held by the TPM/);
        // Both runs' rounds (the challenge, the activation, the retry after the approval) reached the gateway.
        expect(gateway!.lines.filter((line) => line.includes('"path":"/api/compute/v1/join"')).length - joinsBefore).toBeGreaterThanOrEqual(
          3,
        );
      } finally {
        swtpm.kill();
        children.delete(swtpm);
        rmSync(state, { recursive: true, force: true });
      }
    },
  );
});

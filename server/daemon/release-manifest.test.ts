import { execFile } from 'node:child_process';
import { createSign, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { digestSource, parseReleasePinsOption } from '../../cli/commands/daemon';
import { runCli, startApiServer } from '../../test/cli';
import { createMigratedDatabase, dropDatabase } from '../../test/db';
import { insertApiKey } from '../api-keys/api-keys';
import { createTestTenant, failure, type TestTenant } from '../../test/fixtures';
import { createCaller } from '../api/root';
import { PRODUCT_VERSION } from '../config/config';
import { createDb, type Db } from '../db/client';
import { spkiDer, spkiPin } from '../../protocol/pins';
import { initPki } from '../pki/bundle/store';
import { MANIFEST_ORIGINS_ENV, MANIFEST_TEST_HTTP_ENV } from './manifest-fetch';
import { MANIFEST_MAX_BYTES, type ReleasePayload } from './release-manifest';

/** A manifest as docs/operator-guide.md defines it, with any payload (scripts/release-manifest.mjs signs real builds). */
function signReleaseManifest(payload: ReleasePayload, privateKey: KeyObject): string {
  const bytes = Buffer.from(JSON.stringify(payload), 'utf8');
  const signature = createSign('sha256').update(bytes).sign({ key: privateKey, dsaEncoding: 'der' });
  return JSON.stringify({
    payload: bytes.toString('base64'),
    signature: signature.toString('base64'),
    publicKey: spkiDer(privateKey).toString('base64'),
  });
}

// The PKI bundle is a singleton row (the script embeds its pins), so this file has a database of its own.
const name = `release_manifest_${randomBytes(4).toString('hex')}`;
const secret = 'a-long-enough-test-secret-0123456789-abcdefghij';
const releaseKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
const otherKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
const pin = spkiPin(releaseKey);
const amd64 = randomBytes(32).toString('hex');
const arm64 = randomBytes(32).toString('hex');
const payload = (version = PRODUCT_VERSION): ReleasePayload => ({
  name: 'bcd',
  version,
  artifacts: { 'linux-amd64': { sha256: amd64, size: 1000 }, 'linux-arm64': { sha256: arm64, size: 1001 } },
});

/** A signed manifest whose payload is swapped after signing: the signature no longer covers it. */
function tampered(): string {
  const manifest = JSON.parse(signReleaseManifest(payload(), releaseKey));
  const changed = { ...payload(), artifacts: { 'linux-amd64': { sha256: 'f'.repeat(64), size: 1000 } } };
  return JSON.stringify({ ...manifest, payload: Buffer.from(JSON.stringify(changed)).toString('base64') });
}

// What scripts/release-manifest.mjs (npm run build:bcd -- --release-key) wrote for a build, served as is.
const build = path.join(mkdtempSync(path.join(tmpdir(), 'bcd-release-')), PRODUCT_VERSION);
const bodies: Record<string, () => string> = {
  '/built.json': () => readFileSync(path.join(build, 'release-manifest.json'), 'utf8'),
  '/good.json': () => signReleaseManifest(payload(), releaseKey),
  '/other-key.json': () => signReleaseManifest(payload(), otherKey),
  '/tampered.json': tampered,
  '/old-version.json': () => signReleaseManifest(payload('0.0.1'), releaseKey),
  '/bad-digest.json': () => signReleaseManifest({ ...payload(), artifacts: { 'linux-amd64': { sha256: 'abc', size: 1 } } }, releaseKey),
  '/not-json.json': () => '<html>not a manifest</html>',
  '/too-large.json': () => JSON.stringify({ padding: 'x'.repeat(MANIFEST_MAX_BYTES) }),
};

let db: Db;
let tenant: TestTenant;
let server: http.Server;
let base: string;
let closedPort: number;
/** Requests the manifest server answered, and connections a plain TCP listener accepted: refusals make none. */
let manifestRequests = 0;
let listener: net.Server;
let probePort: number;
let probeConnections = 0;

beforeAll(async () => {
  const url = await createMigratedDatabase(name);
  db = createDb(url, { max: 4 });
  await initPki(db, { trustDomain: 'compute.example.com', secret });
  process.env.BETTER_COMPUTE_SECRET = secret;
  tenant = await createTestTenant(db);
  server = http.createServer((req, res) => {
    manifestRequests += 1;
    const body = bodies[req.url ?? ''];
    if (!body) return void res.writeHead(404).end();
    // Chunked, no Content-Length: the size cap must hold while reading, not trust a header.
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(body());
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  // The local manifest server is a test's origin: allowed only with the explicit test setting.
  process.env[MANIFEST_TEST_HTTP_ENV] = '1';
  process.env[MANIFEST_ORIGINS_ENV] = `${base},http://127.0.0.1:${closedPort}`;
  listener = net.createServer((socket) => {
    probeConnections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  probePort = (listener.address() as AddressInfo).port;
}, 180_000);

afterAll(async () => {
  server?.close();
  listener?.close();
  await db?.$disconnect();
  await dropDatabase(name);
  rmSync(path.dirname(build), { recursive: true, force: true });
});

const generate = (change: Record<string, unknown>, principal = tenant.operator) =>
  createCaller({ db, principal }).daemon.installScript({
    tenantId: tenant.tenantId,
    poolId: tenant.poolId,
    gatewayUrl: 'https://gw.eu.example.com',
    baseUrl: 'https://compute.example.com',
    ...change,
  } as never);

// Opening the sealed PKI derives a key with scrypt: seconds on a busy machine.
describe('daemon.installScript with a release manifest', { timeout: 60_000 }, () => {
  it('embeds the digests of a manifest signed by a pinned key, with a rotation listing two pins', async () => {
    const answer = await generate({ releaseManifestUrl: `${base}/good.json`, releasePins: [spkiPin(otherKey), pin] });
    expect(answer.sha256).toEqual({ amd64, arm64 });
    expect(answer.script).toContain(`SHA256_AMD64='${amd64}'`);
    expect(answer.script).toContain(`SHA256_ARM64='${arm64}'`);
  });

  it.each([
    ['a manifest signed by a key that is not pinned', '/other-key.json', 'releasePins', /not one of the pins/],
    ['a payload changed after signing', '/tampered.json', 'releaseManifestUrl', /signature does not verify/],
    ['a manifest of another version', '/old-version.json', 'releaseManifestUrl', /bcd 0\.0\.1, not /],
    ['a digest that is not 64 hex', '/bad-digest.json', 'releaseManifestUrl', /malformed/],
    ['a body that is not JSON', '/not-json.json', 'releaseManifestUrl', /not JSON/],
    ['a manifest over 64 KiB', '/too-large.json', 'releaseManifestUrl', /no release manifest could be fetched/],
    ['a missing manifest', '/nothing-here.json', 'releaseManifestUrl', /no release manifest could be fetched/],
  ])('refuses %s', async (_name, file, field, message) => {
    const answer = await failure(generate({ releaseManifestUrl: `${base}${file}`, releasePins: [pin] }));
    expect(answer).toMatchObject({ code: 'INVALID_ARGUMENT', field });
    expect(answer.message).toMatch(message);
  });

  it('refuses an unreachable manifest', async () => {
    const answer = await failure(generate({ releaseManifestUrl: `http://127.0.0.1:${closedPort}/m.json`, releasePins: [pin] }));
    expect(answer).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'releaseManifestUrl' });
    expect(answer.message).toMatch(/no release manifest could be fetched/);
  });

  it('refuses plain http to anywhere but this machine, before fetching', async () => {
    const answer = await failure(generate({ releaseManifestUrl: 'http://releases.example.com/m.json', releasePins: [pin] }));
    expect(answer).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'releaseManifestUrl' });
    expect(answer.message).toMatch(/no release manifest could be fetched/);
  });

  it.each([
    [
      'sha256 with a manifest',
      { sha256: { amd64: 'a'.repeat(64) }, releaseManifestUrl: 'https://r.example.com/m.json', releasePins: [pin] },
      'releaseManifestUrl',
    ],
    ['a manifest without pins', { releaseManifestUrl: 'https://r.example.com/m.json' }, 'releasePins'],
    ['pins without a manifest', { releasePins: [pin] }, 'releaseManifestUrl'],
    ['a pin that is not sha256/<base64>', { releaseManifestUrl: 'https://r.example.com/m.json', releasePins: ['md5/abc'] }, 'releasePins'],
  ])('refuses %s', async (_name, change, field) => {
    const answer = await failure(generate(change));
    expect(answer.code).toBe('INVALID_ARGUMENT');
    expect(`${answer.field ?? ''} ${answer.message}`).toContain(field);
  });
});

describe('daemon.installScript fetches manifests only where the deployment allows', { timeout: 60_000 }, () => {
  const ownDownloads = mkdtempSync(path.join(tmpdir(), 'bcd-downloads-'));
  const ownUrl = `https://compute.example.com/api/compute/downloads/bcd/${PRODUCT_VERSION}/release-manifest.json`;
  const saved: Record<string, string | undefined> = {};
  const setEnv = (values: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(values)) {
      if (!(name in saved)) saved[name] = process.env[name];
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  afterEach(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
      delete saved[name];
    }
  });
  afterAll(() => rmSync(ownDownloads, { recursive: true, force: true }));

  it('refuses a viewer with ACCESS_DENIED before anything is fetched', async () => {
    const before = manifestRequests;
    const answer = await failure(generate({ releaseManifestUrl: `${base}/good.json`, releasePins: [pin] }, tenant.viewer));
    expect(answer).toMatchObject({ code: 'ACCESS_DENIED' });
    expect(manifestRequests).toBe(before);
    // The same viewer still generates a script from digests it names: only the fetch needs the operator role.
    expect((await generate({ sha256: { amd64 } }, tenant.viewer)).sha256).toEqual({ amd64 });
  });

  it('answers one message for a local port, a private address, another origin, or a name that resolves to this machine, and connects to none', async () => {
    setEnv({ [MANIFEST_ORIGINS_ENV]: `${base},https://localhost:${probePort},https://127.0.0.1:${probePort},https://[::1]:${probePort}` });
    const urls = [
      `http://127.0.0.1:${probePort}/m.json`, // a local port that is not an allowed origin
      `http://localhost:${probePort}/m.json`,
      `https://127.0.0.1:${probePort}/m.json`, // allowed origin, loopback address
      `https://localhost:${probePort}/m.json`, // allowed origin, a name that resolves to loopback
      `https://[::1]:${probePort}/m.json`,
      `https://[::ffff:127.0.0.1]:${probePort}/m.json`,
      'https://10.0.0.1/m.json',
      'https://192.168.1.1/m.json',
      'https://169.254.169.254/latest/meta-data',
      'https://[fd00::1]/m.json',
      'https://[fe80::1]/m.json',
      'https://releases.example.com/m.json', // another origin
      `https://evil.example.com/api/compute/downloads/bcd/${PRODUCT_VERSION}/release-manifest.json`,
    ];
    const messages = new Set<string>();
    for (const releaseManifestUrl of urls) {
      const answer = await failure(generate({ releaseManifestUrl, releasePins: [pin] }));
      expect(answer, releaseManifestUrl).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'releaseManifestUrl' });
      messages.add(answer.message);
    }
    // Unreachable, not 2xx and too large on an allowed origin read the same: nothing tells a port scanner more.
    for (const releaseManifestUrl of [`http://127.0.0.1:${closedPort}/m.json`, `${base}/nothing-here.json`, `${base}/too-large.json`]) {
      messages.add((await failure(generate({ releaseManifestUrl, releasePins: [pin] }))).message);
    }
    expect([...messages]).toHaveLength(1);
    expect([...messages][0]).toMatch(/no release manifest could be fetched/);
    expect(probeConnections).toBe(0);
  });

  it('takes plain-http loopback origins only with the explicit test setting', async () => {
    setEnv({ [MANIFEST_TEST_HTTP_ENV]: undefined, [MANIFEST_ORIGINS_ENV]: undefined });
    const before = manifestRequests;
    const answer = await failure(generate({ releaseManifestUrl: `${base}/good.json`, releasePins: [pin] }));
    expect(answer).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'releaseManifestUrl' });
    expect(manifestRequests).toBe(before);
    setEnv({ [MANIFEST_ORIGINS_ENV]: base });
    expect(await failure(generate({ releaseManifestUrl: `${base}/good.json`, releasePins: [pin] }))).toMatchObject({
      code: 'INVALID_CONFIG',
    });
    expect(manifestRequests).toBe(before);
  });

  it('fetches from an allowed origin by name, connecting only to the addresses it resolved to', async () => {
    const byName = base.replace('127.0.0.1', 'localhost');
    setEnv({ [MANIFEST_ORIGINS_ENV]: byName });
    const before = manifestRequests;
    const answer = await generate({ releaseManifestUrl: `${byName}/good.json`, releasePins: [pin] });
    expect(answer.sha256).toEqual({ amd64, arm64 });
    expect(manifestRequests).toBe(before + 1);
  });

  it("reads this server's own downloads path (the default origin) from the downloads directory", async () => {
    mkdirSync(path.join(ownDownloads, PRODUCT_VERSION), { recursive: true });
    writeFileSync(path.join(ownDownloads, PRODUCT_VERSION, 'release-manifest.json'), signReleaseManifest(payload(), releaseKey));
    setEnv({
      NEXTAUTH_URL: 'https://compute.example.com',
      BETTER_COMPUTE_DOWNLOADS_DIR: ownDownloads,
      [MANIFEST_ORIGINS_ENV]: undefined,
      [MANIFEST_TEST_HTTP_ENV]: undefined,
    });
    const answer = await generate({ releaseManifestUrl: ownUrl, releasePins: [pin] });
    expect(answer.sha256).toEqual({ amd64, arm64 });
    // Another version has no manifest in this build: the same one message.
    const missing = await failure(
      generate({ releaseManifestUrl: ownUrl.replace(PRODUCT_VERSION, '9.9.9'), releasePins: [pin], bcdVersion: '9.9.9' }),
    );
    expect(missing.message).toMatch(/no release manifest could be fetched/);
  });
});

describe('daemon.installScript with an IPv6 origin, on a server with a PKI', { timeout: 60_000 }, () => {
  it('embeds a bracketed IPv6 base and gateway URL, quoted, into a script that fetches with curl -g', async () => {
    const answer = (await generate({ sha256: { amd64 }, baseUrl: 'https://[2001:db8::1]', gatewayUrl: 'https://[2001:db8::2]:8443' })) as {
      script: string;
    };
    expect(answer.script).toContain("BASE_URL='https://[2001:db8::1]'");
    expect(answer.script).toContain('gateway_url = "https://[2001:db8::2]:8443"');
    expect(answer.script).toMatch(/curl -fsSLg -o /);
  });
});

describe('scripts/release-manifest.mjs', { timeout: 60_000 }, () => {
  it('generates a 0600 P-256 key, signs the build the SHA256SUMS lists and prints the pin the generator accepts', async () => {
    mkdirSync(build, { recursive: true });
    writeFileSync(path.join(build, 'linux-amd64'), 'not really bcd');
    writeFileSync(path.join(build, 'SHA256SUMS'), `${amd64}  linux-amd64\n`);
    const keyFile = path.join(build, '..', 'release-key.pem');
    const sign = () => promisify(execFile)(process.execPath, ['scripts/release-manifest.mjs', '--dir', build, '--release-key', keyFile]);
    const first = await sign();
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const printed = /Release pin: (sha256\/\S+)/.exec(first.stdout)![1]!;
    expect(printed).toBe(spkiPin(readFileSync(keyFile, 'utf8')));
    // A second run signs with the same key: the pins in scripts already out there keep working.
    expect((await sign()).stdout).toContain(`Release pin: ${printed}`);
    const answer = await generate({ releaseManifestUrl: `${base}/built.json`, releasePins: [printed] });
    expect(answer.sha256).toEqual({ amd64 });
    expect(answer.script).toContain(`SHA256_AMD64='${amd64}'`);
    const payload = JSON.parse(
      Buffer.from(JSON.parse(readFileSync(path.join(build, 'release-manifest.json'), 'utf8')).payload, 'base64').toString(),
    );
    expect(payload).toEqual({ name: 'bcd', version: PRODUCT_VERSION, artifacts: { 'linux-amd64': { sha256: amd64, size: 14 } } });
  });
});

describe('--release-manifest and --release-pins', () => {
  it('parse comma-separated pins, go together, and are exclusive with --sha256', () => {
    expect(parseReleasePinsOption(` ${pin}, sha256/x `)).toEqual([pin, 'sha256/x']);
    expect(() => parseReleasePinsOption(' , ')).toThrow(/--release-pins takes/);
    expect(digestSource({ releaseManifest: 'https://r.example.com/m.json', releasePins: [pin] })).toEqual({
      sha256: undefined,
      releaseManifestUrl: 'https://r.example.com/m.json',
      releasePins: [pin],
    });
    expect(() =>
      digestSource({ sha256: { amd64: 'a'.repeat(64) }, releaseManifest: 'https://r.example.com/m.json', releasePins: [pin] }),
    ).toThrow(/exclusive/);
    expect(() => digestSource({ releaseManifest: 'https://r.example.com/m.json' })).toThrow(/go together/);
    expect(() => digestSource({ releasePins: [pin] })).toThrow(/go together/);
  });
});

describe('better-compute daemon install-script --release-manifest', { timeout: 120_000 }, () => {
  it('writes the script with the manifest digests, and refuses --sha256 beside it before calling the server', async () => {
    const api = await startApiServer(db);
    try {
      const { key } = await insertApiKey(db, { tenantId: tenant.tenantId, role: 'operator', name: 'rm cli' }, 'test');
      const env = { BETTER_COMPUTE_URL: api.url, BETTER_COMPUTE_API_KEY: key };
      const common = [
        'daemon',
        'install-script',
        '--tenant',
        tenant.tenantId,
        '--pool',
        tenant.poolId,
        '--gateway-url',
        'https://gw.example.com',
        '--base-url',
        'https://compute.example.com',
      ];
      const good = await runCli(
        [...common, '--release-manifest', `${base}/good.json`, '--release-pins', `${spkiPin(otherKey)},${pin}`],
        env,
      );
      expect(good.stderr).toBe('');
      expect(good.code).toBe(0);
      expect(good.stdout).toContain(`SHA256_ARM64='${arm64}'`);
      const served = api.requests.length;
      const both = await runCli(
        [...common, '--sha256', `amd64=${amd64}`, '--release-manifest', `${base}/good.json`, '--release-pins', pin],
        env,
      );
      expect(both.code).not.toBe(0);
      expect(both.stderr).toMatch(/--sha256 and --release-manifest are exclusive/);
      expect(api.requests.slice(served).filter((r) => r.includes('install-script'))).toEqual([]);
      const wrongPin = await runCli([...common, '--release-manifest', `${base}/good.json`, '--release-pins', spkiPin(otherKey)], env);
      expect(wrongPin.code).not.toBe(0);
      expect(wrongPin.stderr).toMatch(/releasePins/);
    } finally {
      await api.close();
    }
  });
});

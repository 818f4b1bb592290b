import { createSign, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { spkiDer, spkiPin } from '../../protocol/pins';
import { createCaller } from '../../server/api/root';
import { PRODUCT_VERSION } from '../../server/config/config';
import { MANIFEST_ORIGINS_ENV, MANIFEST_TEST_HTTP_ENV } from '../../server/daemon/manifest-fetch';
import { MANIFEST_MAX_BYTES, type ReleasePayload } from '../../server/daemon/release-manifest';
import { initPki } from '../../server/pki/bundle/store';
import { createTestTenant, type TestTenant } from '../fixtures';
import { db, useOwnDatabase } from '../own-database';

// Release manifests served to daemon.installScript: signing keys, a local manifest server with one path per
// case, and a tenant on a database with a PKI. Each test file that imports this has its own of each.

/** A manifest as docs/operator-guide.md defines it, with any payload (scripts/release-manifest.mjs signs real builds). */
export function signReleaseManifest(payload: ReleasePayload, privateKey: KeyObject): string {
  const bytes = Buffer.from(JSON.stringify(payload), 'utf8');
  const signature = createSign('sha256').update(bytes).sign({ key: privateKey, dsaEncoding: 'der' });
  return JSON.stringify({
    payload: bytes.toString('base64'),
    signature: signature.toString('base64'),
    publicKey: spkiDer(privateKey).toString('base64'),
  });
}

const secret = 'a-long-enough-test-secret-0123456789-abcdefghij';
export const releaseKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
export const otherKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
export const pin = spkiPin(releaseKey);
export const amd64 = randomBytes(32).toString('hex');
export const arm64 = randomBytes(32).toString('hex');
export const payload = (version = PRODUCT_VERSION): ReleasePayload => ({
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

/** Where scripts/release-manifest.mjs (npm run build:bcd -- --release-key) writes for a build; /built.json serves it as is. */
export const build = path.join(mkdtempSync(path.join(tmpdir(), 'bcd-release-')), PRODUCT_VERSION);
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

export let tenant: TestTenant;
/** The manifest server's origin, and a port nothing listens on (also an allowed origin). */
export let base: string;
export let closedPort: number;
/** Requests the manifest server answered: refusals make none. */
export let manifestRequests = 0;

/**
 * The file's database with a PKI and a tenant, and the manifest server as an allowed plain-http origin (set
 * before its tests, gone after them).
 */
export function useReleaseManifestServer() {
  useOwnDatabase('release_manifest');
  let server: http.Server | undefined;
  beforeAll(async () => {
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
    base = `http://127.0.0.1:${await listen(server)}`;
    const probe = http.createServer();
    closedPort = await listen(probe);
    await new Promise((resolve) => probe.close(resolve));
    // The local manifest server is a test's origin: allowed only with the explicit test setting.
    process.env[MANIFEST_TEST_HTTP_ENV] = '1';
    process.env[MANIFEST_ORIGINS_ENV] = `${base},http://127.0.0.1:${closedPort}`;
  }, 180_000);
  afterAll(() => {
    server?.close();
    rmSync(path.dirname(build), { recursive: true, force: true });
  });
}

/** Listens on a free loopback port, and answers it. */
export async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** daemon.installScript for the tenant's pool as `principal` (the operator unless named), with `change` over the defaults. */
export const generate = (change: Record<string, unknown>, principal = tenant.operator) =>
  createCaller({ db, principal }).daemon.installScript({
    tenantId: tenant.tenantId,
    poolId: tenant.poolId,
    gatewayUrl: 'https://gw.eu.example.com',
    baseUrl: 'https://compute.example.com',
    ...change,
  } as never);

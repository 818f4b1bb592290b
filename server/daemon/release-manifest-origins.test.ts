import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { failure } from '../../test/fixtures';
import { PRODUCT_VERSION } from '../config/config';
import { MANIFEST_ORIGINS_ENV, MANIFEST_TEST_HTTP_ENV } from './manifest-fetch';
import {
  amd64,
  arm64,
  base,
  closedPort,
  generate,
  listen,
  manifestRequests,
  payload,
  pin,
  releaseKey,
  signReleaseManifest,
  tenant,
  useReleaseManifestServer,
} from '../../test/daemon/release-manifest';

// The PKI bundle is a singleton row (the script embeds its pins), so this file has a database of its own.
useReleaseManifestServer();

/** Connections a plain TCP listener accepted: refusals make none. */
let listener: net.Server;
let probePort: number;
let probeConnections = 0;

beforeAll(async () => {
  listener = net.createServer((socket) => {
    probeConnections += 1;
    socket.destroy();
  });
  probePort = await listen(listener);
});

afterAll(() => listener?.close());

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

import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { digestSource, parseReleasePinsOption } from '../../cli/commands/daemon';
import { runCli, startApiServer } from '../../test/cli';
import { db } from '../../test/own-database';
import { insertApiKey } from '../api-keys/api-keys';
import { PRODUCT_VERSION } from '../config/config';
import { spkiPin } from '../../protocol/pins';
import { amd64, arm64, base, build, generate, otherKey, pin, tenant, useReleaseManifestServer } from '../../test/daemon/release-manifest';

// The PKI bundle is a singleton row (the script embeds its pins), so this file has a database of its own.
useReleaseManifestServer();

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

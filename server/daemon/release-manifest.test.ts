import { describe, expect, it } from 'vitest';
import { failure } from '../../test/fixtures';
import { spkiPin } from '../../protocol/pins';
import { amd64, arm64, base, closedPort, generate, otherKey, pin, useReleaseManifestServer } from '../../test/daemon/release-manifest';

// The PKI bundle is a singleton row (the script embeds its pins), so this file has a database of its own.
useReleaseManifestServer();

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

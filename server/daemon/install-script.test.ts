import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { renderInstallScript, type InstallScriptParams } from './install-script';

const params: InstallScriptParams = {
  poolId: 'pool_01jabcdefghjkmnpqrstvwxyz0',
  siteId: 'site_01jabcdefghjkmnpqrstvwxyz0',
  gatewayUrl: 'https://gw.eu.example.com',
  baseUrl: 'https://compute.example.com',
  basePath: '/api/compute',
  bcdVersion: '0.1.0',
  sha256: { amd64: 'a'.repeat(64), arm64: 'b'.repeat(64) },
  servingCaPin: `sha256/${'A'.repeat(43)}=`,
  joinSigningKeyPin: `sha256/${'B'.repeat(43)}=`,
  joinEncryptionKeyPin: `sha256/${'C'.repeat(43)}=`,
  encryptionJwk: { kty: 'EC', crv: 'P-256', x: 'x-_X'.repeat(10) + 'abc', y: 'y-_Y'.repeat(10) + 'abc' },
  generatedBy: 'better-compute 0.1.0',
};
const hasShellcheck = spawnSync('shellcheck', ['--version']).status === 0;

describe('renderInstallScript', () => {
  it.runIf(hasShellcheck)('is POSIX sh that shellcheck passes', () => {
    const result = spawnSync('shellcheck', ['--shell=sh', '--severity=style', '-'], {
      input: renderInstallScript(params),
      encoding: 'utf8',
    });
    expect(result.stdout).toBe('');
    expect(result.status).toBe(0);
  });

  it('parses with sh -n', () => {
    expect(spawnSync('sh', ['-n'], { input: renderInstallScript(params) }).status).toBe(0);
  });

  it('embeds the config.toml the spec shows, the pins, the digests and the public JWK, and no token', () => {
    const script = renderInstallScript(params);
    expect(script).toContain(
      [
        'gateway_url = "https://gw.eu.example.com"',
        `site = "${params.siteId}"`,
        `serving_ca_spki_pin = "${params.servingCaPin}"`,
        `join_signing_key_pin = "${params.joinSigningKeyPin}"`,
        `join_encryption_key_pin = "${params.joinEncryptionKeyPin}"`,
      ].join('\n'),
    );
    expect(script).toContain(`SHA256_AMD64='${'a'.repeat(64)}'`);
    expect(script).toContain(`SHA256_ARM64='${'b'.repeat(64)}'`);
    expect(script).toContain(JSON.stringify(params.encryptionJwk));
    expect(script).not.toMatch(/bcjt_[A-Za-z0-9]/);
  });

  it('refuses to embed a value that would break out of its shell quotes', () => {
    expect(() => renderInstallScript({ ...params, bcdVersion: "0.1.0'; rm -rf /; '" })).toThrow(/Refusing to embed/);
    expect(() => renderInstallScript({ ...params, baseUrl: 'https://x.example.com/$(id)' })).toThrow(/Refusing to embed/);
  });
});

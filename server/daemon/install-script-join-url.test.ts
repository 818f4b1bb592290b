import { spawnSync } from 'node:child_process';
import { beforeEach, describe, expect, it } from 'vitest';
import { renderInstallScript, type InstallScriptParams } from './install-script';

// The install script's join URL and IPv6 handling: the join goes to the gateway of the staged config.toml (never
// to --server), and bracketed IPv6 base and gateway URLs are embedded quoted and fetched with curl -g.

const params: InstallScriptParams = {
  poolId: 'pool_01jabcdefghjkmnpqrstvwxyz0',
  siteId: 'site_01jabcdefghjkmnpqrstvwxyz0',
  gatewayUrl: 'https://[fd00::1]:8443',
  baseUrl: 'https://[fd00::2]',
  basePath: '/api/compute',
  bcdVersion: '0.1.0',
  sha256: { amd64: 'a'.repeat(64) },
  servingCaPin: `sha256/${'A'.repeat(43)}=`,
  joinSigningKeyPin: `sha256/${'B'.repeat(43)}=`,
  joinEncryptionKeyPin: `sha256/${'C'.repeat(43)}=`,
  encryptionJwk: { kty: 'EC', crv: 'P-256', x: 'x-_X'.repeat(10) + 'abc', y: 'y-_Y'.repeat(10) + 'abc' },
  generatedBy: 'better-compute 0.1.0',
};
const hasShellcheck = spawnSync('shellcheck', ['--version']).status === 0;

describe('the install script with IPv6 URLs', () => {
  let script = '';
  beforeEach(() => {
    script = renderInstallScript(params);
  });

  it('joins with the staged config alone: the join goes to its gateway, not to the base URL', () => {
    const joins = script.split('\n').filter((line) => /"\$WORK\/bcd" join /.test(line));
    expect(joins).toEqual([`if ! printf '%s\\n' "$TOKEN" | "$WORK/bcd" join --config "$WORK/etc/config.toml"; then`]);
    expect(script).not.toMatch(/--server/);
  });

  it('embeds the bracketed URLs single-quoted and in config.toml, and downloads with curl -g', () => {
    expect(script).toContain("BASE_URL='https://[fd00::2]'\n");
    expect(script).toContain("GATEWAY_URL='https://[fd00::1]:8443'\n");
    expect(script).toContain('gateway_url = "https://[fd00::1]:8443"\n');
    expect(script).toContain('curl -fsSLg -o "$WORK/bcd" "$URL"');
  });

  it('the shell reads the URLs back as written (sh -n, and the assignments evaluated)', () => {
    expect(spawnSync('sh', ['-n'], { input: script }).status).toBe(0);
    const assignments = script.split('\n').filter((line) => /^(BASE_URL|GATEWAY_URL)=/.test(line));
    const echoed = spawnSync('sh', ['-c', `${assignments.join('\n')}\nprintf '%s %s' "$BASE_URL" "$GATEWAY_URL"`], { encoding: 'utf8' });
    expect(echoed.stdout).toBe('https://[fd00::2] https://[fd00::1]:8443');
  });

  it.runIf(hasShellcheck)('passes shellcheck', () => {
    const result = spawnSync('shellcheck', ['--shell=sh', '--severity=style', '-'], { input: script, encoding: 'utf8' });
    expect(result.stdout).toBe('');
    expect(result.status).toBe(0);
  });

  it('still refuses a value a shell would read otherwise', () => {
    expect(() => renderInstallScript({ ...params, gatewayUrl: "https://[fd00::1]'$(id)" })).toThrow(/Refusing to embed/);
  });
});

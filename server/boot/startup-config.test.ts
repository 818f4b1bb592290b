import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkStartupConfig } from './startup-config';

describe('start-up configuration', () => {
  it('checks the first admin email and the trusted proxies', () => {
    expect(() =>
      checkStartupConfig({ BETTER_COMPUTE_FIRST_ADMIN_EMAIL: 'ops@example.com', BETTER_COMPUTE_TRUSTED_PROXIES: '10.0.0.0/8,::1' }),
    ).not.toThrow();
    expect(() => checkStartupConfig({ BETTER_COMPUTE_FIRST_ADMIN_EMAIL: 'ops' })).toThrow(
      /^BETTER_COMPUTE_FIRST_ADMIN_EMAIL must be an email address, not ops$/,
    );
    expect(() => checkStartupConfig({ BETTER_COMPUTE_TRUSTED_PROXIES: 'proxy.local' })).toThrow(
      /^BETTER_COMPUTE_TRUSTED_PROXIES: "proxy.local" is not an IP address or CIDR range$/,
    );
  });

  it('checks the live-stream bounds: a recheck at least every 30 s', () => {
    expect(() =>
      checkStartupConfig({
        BETTER_COMPUTE_STREAM_RECHECK_SECONDS: '5',
        BETTER_COMPUTE_STREAM_MAX_SECONDS: '600',
        BETTER_COMPUTE_STREAMS_PER_PRINCIPAL: '4',
      }),
    ).not.toThrow();
    expect(() => checkStartupConfig({ BETTER_COMPUTE_STREAM_RECHECK_SECONDS: '31' })).toThrow(
      /^BETTER_COMPUTE_STREAM_RECHECK_SECONDS must be a whole number from 1 to 30, not 31$/,
    );
    expect(() => checkStartupConfig({ BETTER_COMPUTE_STREAM_MAX_SECONDS: '0' })).toThrow(/BETTER_COMPUTE_STREAM_MAX_SECONDS/);
    expect(() => checkStartupConfig({ BETTER_COMPUTE_STREAMS_PER_PRINCIPAL: 'many' })).toThrow(/BETTER_COMPUTE_STREAMS_PER_PRINCIPAL/);
  });

  it('accepts the defaults and good values', () => {
    expect(() => checkStartupConfig({})).not.toThrow();
    expect(() =>
      checkStartupConfig({
        BETTER_COMPUTE_CERT_TTL_SECONDS: '3600',
        BETTER_COMPUTE_GATEWAY_URL: 'https://gw.example.com',
        BETTER_COMPUTE_WORKERS: '2',
      }),
    ).not.toThrow();
    // What the operator guide's generators print (docs/operator-guide.md): `openssl rand -base64 32`, `openssl rand -hex 32`, and the dev secret's form.
    for (const generated of [randomBytes(32).toString('base64'), randomBytes(32).toString('hex'), randomBytes(32).toString('base64url')]) {
      expect(() => checkStartupConfig({ BETTER_COMPUTE_SECRET: generated })).not.toThrow();
    }
  });

  it('refuses each bad setting with one clear line naming it', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ BETTER_COMPUTE_CERT_TTL_SECONDS: '59' }, /^BETTER_COMPUTE_CERT_TTL_SECONDS must be a whole number from 60 to 86400, not 59$/],
      [{ BETTER_COMPUTE_CERT_TTL_SECONDS: '86401' }, /BETTER_COMPUTE_CERT_TTL_SECONDS/],
      [{ BETTER_COMPUTE_GATEWAY_URL: 'gw.example.com' }, /^BETTER_COMPUTE_GATEWAY_URL must be an https:\/\/ URL/],
      [{ BETTER_COMPUTE_GATEWAY_URL: 'http://gw.example.com' }, /https:\/\//],
      [
        { BETTER_COMPUTE_SECRET: 'short' },
        /^BETTER_COMPUTE_SECRET must be at least 43 characters of random text \(128 bits or more\); generate one with `openssl rand -base64 32`\. .*BETTER_COMPUTE_PREVIOUS_SECRET$/,
      ],
      // The old rule's minimum (16) and anything under 43 characters, or long but repetitive, is refused.
      [{ BETTER_COMPUTE_SECRET: 'a-long-enough-test-secret-0123456' }, /^BETTER_COMPUTE_SECRET must be at least 43 characters/],
      [{ BETTER_COMPUTE_SECRET: 'ab'.repeat(30) }, /^BETTER_COMPUTE_SECRET repeats too few characters/],
      [{ BETTER_COMPUTE_WORKERS: '0' }, /^BETTER_COMPUTE_WORKERS must be 1 to 64/],
    ];
    for (const [env, message] of cases) expect(() => checkStartupConfig(env), JSON.stringify(env)).toThrow(message);
  });
});

describe('start-up configuration of the gateway', () => {
  it('refuses a bad gateway limit before the gateway starts', () => {
    expect(() =>
      checkStartupConfig({ BETTER_COMPUTE_GATEWAY_HANDSHAKE_TIMEOUT_SECONDS: '10', BETTER_COMPUTE_GATEWAY_MAX_CONNECTIONS: '500' }),
    ).not.toThrow();
    expect(() => checkStartupConfig({ BETTER_COMPUTE_GATEWAY_HANDSHAKE_TIMEOUT_SECONDS: '0' })).toThrow(
      /^BETTER_COMPUTE_GATEWAY_HANDSHAKE_TIMEOUT_SECONDS must be a whole number from 1 to 120, not 0$/,
    );
    expect(() => checkStartupConfig({ BETTER_COMPUTE_GATEWAY_MAX_CONNECTIONS: 'lots' })).toThrow(
      /^BETTER_COMPUTE_GATEWAY_MAX_CONNECTIONS must be a whole number/,
    );
  });
});

describe("the operator guide's secret generators", () => {
  it("print a secret the start accepts (Debian's openssl, and node)", () => {
    const fromOpenssl = execFileSync('openssl', ['rand', '-base64', '32']).toString().trim();
    const fromNode = execFileSync(process.execPath, ['-e', "console.log(require('node:crypto').randomBytes(32).toString('base64url'))"])
      .toString()
      .trim();
    for (const secret of [fromOpenssl, fromNode]) expect(() => checkStartupConfig({ BETTER_COMPUTE_SECRET: secret })).not.toThrow();
  });
});

import { describe, expect, it } from 'vitest';
import { checkStartupConfig } from './startup-config';

describe('start-up configuration', () => {
  it('accepts the defaults and good values', () => {
    expect(() => checkStartupConfig({})).not.toThrow();
    expect(() => checkStartupConfig({ BETTER_COMPUTE_CERT_TTL_SECONDS: '3600', BETTER_COMPUTE_GATEWAY_URL: 'https://gw.example.com', BETTER_COMPUTE_WORKERS: '2' })).not.toThrow();
  });

  it('refuses each bad setting with one clear line naming it', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ BETTER_COMPUTE_CERT_TTL_SECONDS: '59' }, /^BETTER_COMPUTE_CERT_TTL_SECONDS must be a whole number from 60 to 86400, not 59$/],
      [{ BETTER_COMPUTE_CERT_TTL_SECONDS: '86401' }, /BETTER_COMPUTE_CERT_TTL_SECONDS/],
      [{ BETTER_COMPUTE_GATEWAY_URL: 'gw.example.com' }, /^BETTER_COMPUTE_GATEWAY_URL must be an https:\/\/ URL/],
      [{ BETTER_COMPUTE_GATEWAY_URL: 'http://gw.example.com' }, /https:\/\//],
      [{ BETTER_COMPUTE_SECRET: 'short' }, /^BETTER_COMPUTE_SECRET must be at least 16 characters$/],
      [{ BETTER_COMPUTE_WORKERS: '0' }, /^BETTER_COMPUTE_WORKERS must be 1 to 64/],
    ];
    for (const [env, message] of cases) expect(() => checkStartupConfig(env), JSON.stringify(env)).toThrow(message);
  });
});

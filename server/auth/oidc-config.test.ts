import { describe, expect, it } from 'vitest';
import { checkStartupConfig } from '../boot/startup-config';
import { oidcConfigFromEnv, passwordSignInForEveryone } from './oidc-config';
import { mappedRoles } from '../operators/sso';

const base = {
  BETTER_COMPUTE_OIDC_ISSUER: 'https://idp.example.com/realms/acme/',
  BETTER_COMPUTE_OIDC_CLIENT_ID: 'better-compute',
  BETTER_COMPUTE_OIDC_CLIENT_SECRET: 'not-in-any-message',
  BETTER_COMPUTE_OIDC_ROLE_MAP:
    '{"ops": {"tenant": "root", "role": "operator"}, "sre": [{"tenant": "a", "role": "admin"}, {"tenant": "b", "role": "approver"}]}',
};

const messageOf = (env: Record<string, string>) => {
  try {
    checkStartupConfig(env);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
};

describe('OpenID Connect configuration from the environment', () => {
  it('is off without an issuer, and read whole with one', () => {
    expect(oidcConfigFromEnv({})).toBeNull();
    const config = oidcConfigFromEnv({ ...base, BETTER_COMPUTE_OIDC_NAME: 'Acme SSO' })!;
    expect(config).toMatchObject({
      issuer: 'https://idp.example.com/realms/acme',
      clientId: 'better-compute',
      name: 'Acme SSO',
      groupsClaim: 'groups',
    });
    expect(config.roleMap.get('sre')).toEqual([
      { tenant: 'a', role: 'admin' },
      { tenant: 'b', role: 'approver' },
    ]);
    expect(oidcConfigFromEnv({ ...base, BETTER_COMPUTE_OIDC_GROUPS_CLAIM: 'roles' })!.groupsClaim).toBe('roles');
  });

  it('stops the start on a half-configured provider, naming the variable and never the secret', () => {
    expect(messageOf({ ...base, BETTER_COMPUTE_OIDC_CLIENT_ID: '' })).toMatch(/BETTER_COMPUTE_OIDC_CLIENT_ID must be set/);
    expect(messageOf({ ...base, BETTER_COMPUTE_OIDC_CLIENT_SECRET: '' })).toMatch(/BETTER_COMPUTE_OIDC_CLIENT_SECRET must be set/);
    expect(messageOf({ ...base, BETTER_COMPUTE_OIDC_ROLE_MAP: '' })).toMatch(/BETTER_COMPUTE_OIDC_ROLE_MAP must be set/);
    expect(messageOf({ ...base, BETTER_COMPUTE_OIDC_ROLE_MAP: '{not json' })).toMatch(/must be a JSON object/);
    expect(messageOf({ ...base, BETTER_COMPUTE_OIDC_ROLE_MAP: '{"ops": {"tenant": "root", "role": "owner"}}' })).toMatch(
      /BETTER_COMPUTE_OIDC_ROLE_MAP: ops\.0\.role: .*\(roles: admin, operator, approver, viewer\)/,
    );
    expect(messageOf({ ...base, BETTER_COMPUTE_OIDC_ISSUER: 'http://idp.example.com' })).toMatch(/https:\/\//);
    expect(messageOf({ ...base, BETTER_COMPUTE_PASSWORD_SIGN_IN: 'no' })).toMatch(/BETTER_COMPUTE_PASSWORD_SIGN_IN must be true or false/);
    expect(messageOf({ ...base, BETTER_COMPUTE_OIDC_CLIENT_ID: '' })).not.toContain('not-in-any-message');
    expect(messageOf({ ...base, BETTER_COMPUTE_OIDC_ISSUER: 'http://127.0.0.1:9000' })).toBeNull();
  });

  it('reads the password switch', () => {
    expect(passwordSignInForEveryone({})).toBe(true);
    expect(passwordSignInForEveryone({ BETTER_COMPUTE_PASSWORD_SIGN_IN: 'FALSE' })).toBe(false);
  });

  it('maps groups to the strongest role per tenant', () => {
    const config = oidcConfigFromEnv({
      ...base,
      BETTER_COMPUTE_OIDC_ROLE_MAP:
        '{"v": {"tenant": "a", "role": "viewer"}, "x": {"tenant": "a", "role": "admin"}, "y": {"tenant": "b", "role": "approver"}}',
    })!;
    expect([...mappedRoles(['v', 'x', 'unknown'], config.roleMap)]).toEqual([['a', 'admin']]);
    expect([...mappedRoles(['y', 'v'], config.roleMap)].sort()).toEqual([
      ['a', 'viewer'],
      ['b', 'approver'],
    ]);
  });
});

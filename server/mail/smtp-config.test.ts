import { describe, expect, it } from 'vitest';
import { checkStartupConfig } from '../boot/startup-config';
import { smtpConfigFromEnv } from './smtp-config';

describe('BETTER_COMPUTE_SMTP_URL', () => {
  it('is optional: unset or empty, invitations are not mailed', () => {
    expect(smtpConfigFromEnv({})).toBeNull();
    expect(smtpConfigFromEnv({ BETTER_COMPUTE_SMTP_URL: '' })).toBeNull();
  });

  it('reads smtp:// (STARTTLS when offered, port 587) and smtps:// (port 465), with percent-encoded credentials', () => {
    expect(
      smtpConfigFromEnv({
        BETTER_COMPUTE_SMTP_URL: 'smtp://mailer:s3cret%2Fp%40ss@mail.example.com',
        NEXTAUTH_URL: 'https://compute.example.com:8443/',
      }),
    ).toEqual({
      host: 'mail.example.com',
      port: 587,
      secure: false,
      auth: { user: 'mailer', pass: 's3cret/p@ss' },
      from: 'Better Compute <no-reply@compute.example.com>',
      display: 'smtp://mailer:***@mail.example.com',
    });
    expect(
      smtpConfigFromEnv({ BETTER_COMPUTE_SMTP_URL: 'smtps://relay.example.com:2465', BETTER_COMPUTE_SMTP_FROM: 'Ops <ops@example.com>' }),
    ).toMatchObject({
      host: 'relay.example.com',
      port: 2465,
      secure: true,
      auth: undefined,
      from: 'Ops <ops@example.com>',
    });
    expect(smtpConfigFromEnv({ BETTER_COMPUTE_SMTP_URL: 'smtps://[::1]' })).toMatchObject({
      host: '::1',
      port: 465,
      from: 'Better Compute <no-reply@localhost>',
    });
  });

  it('stops the start with one clear INVALID_CONFIG line that never holds the password', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [
        { BETTER_COMPUTE_SMTP_URL: 'mail.example.com' },
        /^BETTER_COMPUTE_SMTP_URL must be smtp:\/\/user:pass@host:port or smtps:\/\/user:pass@host:port \(not a URL\), not mail\.example\.com$/,
      ],
      [
        { BETTER_COMPUTE_SMTP_URL: 'https://u:hunter2-secret@mail.example.com' },
        /^BETTER_COMPUTE_SMTP_URL must be .* \(the scheme is smtp or smtps\), not https:\/\/u:\*\*\*@mail\.example\.com\/$/,
      ],
      [
        { BETTER_COMPUTE_SMTP_URL: 'smtp://u:hunter2-secret@mail.example.com:2525?pool=true' },
        /\(nothing may follow host:port\), not smtp:\/\/u:\*\*\*@mail\.example\.com:2525\?pool=true$/,
      ],
      [
        { BETTER_COMPUTE_SMTP_URL: 'smtp://u:hunter2-secret@mail.example.com:99999' },
        /\(not a URL\), not smtp:\/\/u:\*\*\*@mail\.example\.com:99999$/,
      ],
      [{ BETTER_COMPUTE_SMTP_URL: 'smtp://:hunter2-secret@mail.example.com' }, /\(a password needs a user\)/],
      [{ BETTER_COMPUTE_SMTP_URL: 'smtp://u:hunter2-secret%@mail.example.com' }, /\(the user and password are percent-encoded\)/],
      [
        { BETTER_COMPUTE_SMTP_URL: 'smtp://mail.example.com', BETTER_COMPUTE_SMTP_FROM: 'Ops <ops@example.com>\r\nBcc: x@evil.example' },
        /^BETTER_COMPUTE_SMTP_FROM must be an address/,
      ],
      [
        { BETTER_COMPUTE_SMTP_URL: 'smtp://mail.example.com', BETTER_COMPUTE_SMTP_FROM: 'nobody' },
        /^BETTER_COMPUTE_SMTP_FROM must be an address, as `Better Compute <no-reply@example.com>` or `no-reply@example.com`, not nobody$/,
      ],
    ];
    for (const [env, message] of cases) {
      let thrown: unknown;
      try {
        checkStartupConfig(env);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(env)).toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringMatching(message) });
      expect((thrown as Error).message).not.toContain('hunter2');
    }
  });
});

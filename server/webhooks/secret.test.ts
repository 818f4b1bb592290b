import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DEFAULT_WEBHOOK_SETTINGS, retryDelayMs, webhookSettingsFromEnv } from './config';
import { newWebhookSecret, openWebhookSecret, sealWebhookSecret, signWebhook, webhookSignatureMatches } from './secret';
import { checkWebhookUrl } from './target';

describe('webhook secrets and signatures', () => {
  it('signs as the Standard Webhooks test vector', () => {
    // The specification's reference libraries' vector.
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    expect(signWebhook(secret, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}')).toBe(
      'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    );
    expect(
      webhookSignatureMatches(
        secret,
        'msg_p5jXN8AQM9LWM0D4loKWxJek',
        1614265330,
        '{"test": 2432232314}',
        'v1,bm9wZQ== v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
      ),
    ).toBe(true);
    expect(
      webhookSignatureMatches(
        secret,
        'msg_p5jXN8AQM9LWM0D4loKWxJek',
        1614265331,
        '{"test": 2432232314}',
        'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
      ),
    ).toBe(false);
  });

  it('makes whsec_ secrets of 32 random bytes', () => {
    const a = newWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(32);
    expect(newWebhookSecret()).not.toBe(a);
  });

  it('seals under the server secret, bound to the subscription, and opens with the previous secret too', () => {
    const [current, previous] = [randomBytes(32).toString('base64url'), randomBytes(32).toString('base64url')];
    const secret = newWebhookSecret();
    const sealed = sealWebhookSecret(secret, 'wh_one', previous);
    expect(sealed.includes(Buffer.from(secret))).toBe(false);
    expect(openWebhookSecret(sealed, 'wh_one', [current, previous])).toBe(secret);
    expect(() => openWebhookSecret(sealed, 'wh_two', [current, previous])).toThrow(/does not open/);
    expect(() => openWebhookSecret(sealed, 'wh_one', [current])).toThrow(/does not open/);
    expect(() => openWebhookSecret(Buffer.from('nope'), 'wh_one', [current])).toThrow(/malformed/);
  });
});

describe('webhook settings', () => {
  it('backs off exponentially with jitter, capped', () => {
    const s = { retryBaseMs: 1_000, retryMaxMs: 60_000 };
    expect([1, 2, 3, 4].map((n) => retryDelayMs(s, n, () => 0))).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(retryDelayMs(s, 4, () => 1)).toBe(4_000);
    expect(retryDelayMs(s, 30, () => 0)).toBe(60_000);
  });

  it('reads the environment and refuses values out of range', () => {
    expect(webhookSettingsFromEnv({})).toEqual(DEFAULT_WEBHOOK_SETTINGS);
    expect(
      webhookSettingsFromEnv({ BETTER_COMPUTE_WEBHOOK_RETRY_BASE_MS: '50', BETTER_COMPUTE_WEBHOOK_ALLOW_PRIVATE: 'true' }),
    ).toMatchObject({ retryBaseMs: 50, allowPrivate: true });
    expect(() => webhookSettingsFromEnv({ BETTER_COMPUTE_WEBHOOK_TIMEOUT_MS: '10s' })).toThrow(/BETTER_COMPUTE_WEBHOOK_TIMEOUT_MS/);
  });

  it('checks a subscription URL', () => {
    expect(checkWebhookUrl('https://hooks.example.com/x?y=1', false).toString()).toBe('https://hooks.example.com/x?y=1');
    for (const bad of [
      'https://127.0.0.1/',
      'http://10.0.0.8/',
      'https://169.254.169.254/',
      'http://[::1]/',
      'http://[fd00::1]/',
      'http://localhost:8080/',
      'file:///etc/passwd',
      'https://a:b@example.com/',
      'https://example.com/#x',
      'nope',
    ]) {
      expect(() => checkWebhookUrl(bad, false), bad).toThrow(/url/);
    }
    expect(checkWebhookUrl('http://127.0.0.1:8080/hook', true).toString()).toBe('http://127.0.0.1:8080/hook');
  });
});

import { describe, expect, it } from 'vitest';
import { loginUrl } from './login-url';

describe('loginUrl', () => {
  it('keeps a deep link, query included, as the callback', () => {
    const url = new URL(loginUrl('/events?tenant=t1&type=join.admitted'), 'http://x');
    expect(url.pathname).toBe('/login');
    expect(url.searchParams.get('callbackUrl')).toBe('/events?tenant=t1&type=join.admitted');
    expect(url.searchParams.has('expired')).toBe(false);
  });

  it('says the session expired when asked', () => {
    const url = new URL(loginUrl('/join-tokens', { expired: true }), 'http://x');
    expect(url.searchParams.get('expired')).toBe('1');
    expect(url.searchParams.get('callbackUrl')).toBe('/join-tokens');
  });

  it('drops return paths that would redirect off the site, and needs none for the home page', () => {
    expect(loginUrl('//evil.example/x')).toBe('/login');
    expect(loginUrl('https://evil.example/')).toBe('/login');
    expect(loginUrl('/')).toBe('/login');
    expect(loginUrl(null)).toBe('/login');
    expect(loginUrl('/login?callbackUrl=/x')).toBe('/login');
  });
});

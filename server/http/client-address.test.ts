import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabaseUrl, testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { createAuthOptions } from '../auth/auth-options';
import { createBootServer } from '../boot/http-server';
import { createServices } from '../boot/services';
import { createOperator, SIGN_IN_THROTTLE } from '../operators/operators';
import { CLIENT_ADDRESS_HEADER, clientAddressOf, parseTrustedProxies } from './client-address';

describe('the client address', () => {
  it('is the socket peer, and X-Forwarded-For is ignored unless that peer is a trusted proxy', () => {
    expect(clientAddressOf('::ffff:203.0.113.9', '198.51.100.1', null)).toBe('203.0.113.9');
    const trusted = parseTrustedProxies('10.0.0.0/8, 192.0.2.1, fd00::/8');
    expect(clientAddressOf('203.0.113.9', '198.51.100.1', trusted)).toBe('203.0.113.9');
    expect(clientAddressOf('10.1.2.3', '198.51.100.1', trusted)).toBe('198.51.100.1');
    // A client writes what it likes at the left; only the hops our proxies appended are believed.
    expect(clientAddressOf('10.1.2.3', '1.2.3.4, 198.51.100.1, 192.0.2.1', trusted)).toBe('198.51.100.1');
    expect(clientAddressOf('fd00::1', ['garbage', '2001:db8::5'], trusted)).toBe('2001:db8::5');
    expect(clientAddressOf('10.1.2.3', 'not-an-address', trusted)).toBe('10.1.2.3');
    expect(clientAddressOf('10.1.2.3', undefined, trusted)).toBe('10.1.2.3');
  });

  it('refuses a trusted-proxy setting that is not addresses or CIDR ranges', () => {
    expect(parseTrustedProxies('')).toBeNull();
    for (const bad of ['10.0.0.0/33', 'proxy.example.com', '10.0.0.1/8/1', '::1/129']) {
      expect(() => parseTrustedProxies(bad), bad).toThrow(/BETTER_COMPUTE_TRUSTED_PROXIES/);
    }
  });
});

describe('sign-in through the boot server', () => {
  const servers: http.Server[] = [];
  let port = 0;
  beforeAll(async () => {
    const provider = createAuthOptions(testDb, 'http://localhost:3000').providers[0] as unknown as {
      options: { authorize: (c: Record<string, string>, req: { headers: http.IncomingHttpHeaders }) => Promise<unknown> };
    };
    // "Next" is next-auth's credentials check, given the request's headers exactly as next-auth passes them.
    const server = createBootServer(createServices({ databaseUrl: testDatabaseUrl() }), () => async (req, res) => {
      const credentials = JSON.parse(decodeURIComponent(new URL(req.url!, 'http://x').searchParams.get('c')!)) as Record<string, string>;
      try {
        const user = await provider.options.authorize(credentials, { headers: req.headers });
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ ok: !!user, address: req.headers[CLIENT_ADDRESS_HEADER] }));
      } catch (error) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ error: (error as Error).message }));
      }
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  });

  /** Signs in from `localAddress` (every 127/8 address is this machine), with headers a client chose. */
  const signIn = (localAddress: string, email: string, password: string, headers: Record<string, string> = {}) =>
    new Promise<{ ok?: boolean; error?: string; address?: string }>((resolve, reject) => {
      const c = encodeURIComponent(JSON.stringify({ email, password }));
      const req = http.get({ host: '127.0.0.1', port, localAddress, path: `/sign-in?c=${c}`, headers, agent: false }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve(JSON.parse(body)));
      });
      req.on('error', reject);
    });

  it("locks out a stranger's address, not the right password from another, and ignores a forged address", { timeout: 60_000 }, async () => {
    const t = await createTestTenant(testDb());
    const email = `admin-${randomBytes(4).toString('hex')}@example.com`;
    await createOperator(testDb(), { email, name: 'Admin', password: 'the-right-password', tenantId: t.tenantId, role: 'admin' });
    for (let i = 0; i < SIGN_IN_THROTTLE.freeFailures; i++) {
      // Each guess claims to come from elsewhere; the server believes only the socket.
      const forged = { [CLIENT_ADDRESS_HEADER]: `198.51.100.${i}`, 'x-forwarded-for': `198.51.100.${i}` };
      expect(await signIn('127.0.0.2', email, 'a-wrong-guess', forged)).toEqual({ ok: false, address: '127.0.0.2' });
    }
    expect(await signIn('127.0.0.2', email, 'the-right-password', { 'x-forwarded-for': '127.0.0.1' })).toEqual({
      error: 'TooManyFailedSignIns',
    });
    expect(await signIn('127.0.0.1', email, 'the-right-password')).toEqual({ ok: true, address: '127.0.0.1' });
  });
});

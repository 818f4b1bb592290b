import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { createPkiBundle } from '../../server/pki/bundle/bundle';
import { issueGatewayCertificate } from '../../server/pki/issuance/gateway';
import { installPins } from '../../server/pki/pins-summary';
import { TrustStore } from '../trust/store';
import { baseUrlOf } from './base-url';
import { formatConfigToml, parseConfigToml } from './config-toml';
import { joinFetch } from './join-fetch';
import { pinnedFetch } from './pinned-fetch';

// Where bcd join sends what, and IPv6 literal URLs through bcd's own parsing, config.toml and the pinned fetch.

const PIN = `sha256/${'A'.repeat(43)}=`;
const servers: https.Server[] = [];
afterAll(() => servers.forEach((server) => server.close()));

describe('baseUrlOf', () => {
  it.each([
    ['https://[::1]:8443/', 'https://[::1]:8443'],
    ['https://[FD00:0::1]', 'https://[fd00::1]'],
    ['http://[::1]:3000//', 'http://[::1]:3000'],
    ['https://gw.example.com/', 'https://gw.example.com'],
  ])('reads %s as %s', (raw, base) => expect(baseUrlOf(raw, '--server')).toBe(base));

  it.each([
    ['https://fd00::1', /write an IPv6 address in brackets/],
    ['https://[fd00::1]:8443?x=1', /must be a base URL/],
    ['ftp://[::1]', /must be an https:\/\/ URL/],
  ])('refuses %s', (raw, message) => expect(() => baseUrlOf(raw, '--server')).toThrow(message));
});

describe('config.toml with an IPv6 gateway', () => {
  it('round-trips gateway_url = "https://[fd00::1]:8443"', () => {
    const config = {
      gatewayUrl: 'https://[fd00::1]:8443',
      site: 'site_1',
      servingCaSpkiPin: PIN,
      joinSigningKeyPin: PIN,
      joinEncryptionKeyPin: PIN,
    };
    const text = formatConfigToml(config);
    expect(text).toContain('gateway_url = "https://[fd00::1]:8443"\n');
    expect(parseConfigToml(text)).toEqual(config);
  });
});

describe('joinFetch', () => {
  const trust = () => TrustStore.open({ dir: null, install: { servingCaPin: PIN, joinSigningKeyPin: PIN, joinEncryptionKeyPin: PIN } });
  const recorder = () => {
    const urls: string[] = [];
    const fetch = (async (input: string | URL | Request) => {
      urls.push(String(input));
      return new Response('{}');
    }) as typeof globalThis.fetch;
    return { urls, fetch };
  };

  it('sends the join to the gateway and reads the well-known document from --server', async () => {
    const { urls, fetch } = recorder();
    const doFetch = joinFetch({
      gatewayUrl: 'https://[fd00::2]:8443',
      servingCaPin: PIN,
      trust: await trust(),
      wellKnownUrl: 'https://[fd00::1]',
      fetch,
    });
    await doFetch('https://[fd00::2]:8443/api/compute/.well-known/better-compute');
    await doFetch('https://[fd00::2]:8443/api/compute/v1/join', { method: 'POST', body: '{}' });
    expect(urls).toEqual(['https://[fd00::1]/api/compute/.well-known/better-compute', 'https://[fd00::2]:8443/api/compute/v1/join']);
  });

  it('without --server, reads the document through the gateway too', async () => {
    const { urls, fetch } = recorder();
    const doFetch = joinFetch({ gatewayUrl: 'https://gw.example.com', servingCaPin: PIN, trust: await trust(), fetch });
    await doFetch('https://gw.example.com/api/compute/.well-known/better-compute');
    expect(urls).toEqual(['https://gw.example.com/api/compute/.well-known/better-compute']);
  });
});

describe('pinnedFetch to an IPv6 literal', () => {
  it('connects to [::1], sends no SNI, a bracketed Host header, and checks the IP SAN', async () => {
    const bundle = createPkiBundle({ trustDomain: 'ipv6.example.com' });
    const cert = issueGatewayCertificate(bundle, { sans: ['::1'] });
    const seen: Array<{ sni: string | false | null; host: string | undefined }> = [];
    const server = https.createServer({ cert: cert.chainPem, key: cert.privateKeyPem }, (req, res) => {
      seen.push({ sni: (req.socket as TLSSocket).servername, host: req.headers.host });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '::1', resolve));
    const url = `https://[::1]:${(server.address() as AddressInfo).port}`;
    const pin = installPins(bundle).servingCaPin;
    const response = await pinnedFetch({ servingCaPin: pin })(`${url}/api/compute/v1/join`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(200);
    expect(seen).toEqual([{ sni: false, host: url.slice('https://'.length) }]);
    // A name the leaf does not hold as an IP SAN is refused.
    await expect(pinnedFetch({ servingCaPin: pin, serverName: '::2' })(`${url}/x`)).rejects.toThrow(/does not name ::2/);
  });
});

describe('pinnedFetch to a gateway that says nothing', () => {
  it('gives up after its timeout instead of holding bcd join for ever', async () => {
    const { createServer } = await import('node:net');
    const silent = createServer(() => {}); // takes the connection, never answers the TLS handshake
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const url = `https://127.0.0.1:${(silent.address() as AddressInfo).port}/api/compute/v1/join`;
      await expect(pinnedFetch({ servingCaPin: PIN, timeoutMs: 200 })(url, { method: 'POST', body: '{}' })).rejects.toThrow(
        /did not answer within/,
      );
    } finally {
      silent.close();
    }
  });
});

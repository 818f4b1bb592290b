import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPkiBundle } from '../../server/pki/bundle/bundle';
import { issueGatewayCertificate } from '../../server/pki/issuance/gateway';
import { installPins } from '../../server/pki/pins-summary';
import { pinnedFetch } from './pinned-fetch';

// A gateway on 127.0.0.1 with a certificate from a real serving CA, as `pki issue-gateway` makes it.
const bundle = createPkiBundle({ trustDomain: 'pinned.example.com' });
const other = createPkiBundle({ trustDomain: 'other.example.com' });
const pin = installPins(bundle).servingCaPin;
const servers: https.Server[] = [];
const received: string[] = [];

async function gateway(chainPem: string, privateKeyPem: string): Promise<string> {
  const server = https.createServer({ cert: chainPem, key: privateKeyPem }, (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk));
    req.on('end', () => {
      received.push(`${req.method} ${req.url} ${body}`);
      res.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let good: string;
let leafOnly: string;
let otherCa: string;
let borrowedCa: string;
beforeAll(async () => {
  const cert = issueGatewayCertificate(bundle, { sans: ['127.0.0.1'] });
  good = await gateway(cert.chainPem, cert.privateKeyPem);
  leafOnly = await gateway(cert.certificatePem, cert.privateKeyPem);
  const foreign = issueGatewayCertificate(other, { sans: ['127.0.0.1'] });
  otherCa = await gateway(foreign.chainPem, foreign.privateKeyPem);
  // Another CA's leaf sent along with the pinned CA's certificate, which is public: the pin alone is not enough.
  borrowedCa = await gateway(foreign.certificatePem + bundle.servingCa.certificatePem, foreign.privateKeyPem);
});
afterAll(() => servers.forEach((server) => server.close()));

describe('pinnedFetch', () => {
  it('talks to a gateway whose chain carries the pinned serving CA, with no system CA involved', async () => {
    const response = await pinnedFetch({ servingCaPin: pin })(`${good}/api/compute/v1/join`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(response.status).toBe(201);
    expect(await response.json()).toEqual({ ok: true });
    expect(received).toContain('POST /api/compute/v1/join {"a":1}');
  });

  it.each([
    ['a gateway of another serving CA', () => otherCa, pin, undefined, /has the key of serving_ca_spki_pin/],
    ['a leaf of another CA beside the pinned CA certificate', () => borrowedCa, pin, undefined, /Refusing the gateway/],
    ['a gateway that sends no CA to check', () => leafOnly, pin, undefined, /full chain/],
    ['a certificate for another name', () => good, pin, 'gw.example.com', /does not name gw.example.com/],
  ])('refuses %s before sending the request', async (_name, url, servingCaPin, serverName, message) => {
    const before = received.length;
    await expect(
      pinnedFetch({ servingCaPin, serverName })(`${url()}/api/compute/v1/join`, { method: 'POST', body: 'secret' }),
    ).rejects.toThrow(message);
    expect(received.length).toBe(before);
  });

  it('refuses plain http', async () => {
    await expect(pinnedFetch({ servingCaPin: pin })('http://127.0.0.1:1/x')).rejects.toThrow(/https only/);
  });
});

import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPkiBundle } from '../../server/pki/bundle/bundle';
import { issueGatewayCertificate } from '../../server/pki/issuance/gateway';
import { installPins } from '../../server/pki/pins-summary';
import { activateInBundle, prepareInBundle, retireInBundle } from '../../server/pki/rotation/bundle-steps';
import { makeRotatingKey } from '../../server/pki/rotation/new-key';
import { pinnedFetch } from '../bcd/pinned-fetch';
import { checkGatewayChain } from '../renew/gateway-client';
import type { TrustStore } from './store';

// A gateway during a serving CA rotation sends its leaf, the new serving CA certified by the old one, and the old
// one. Every client accepts it: bcd's pinned fetch and the sessions' and renewals' chain check with the old pin
// alone, with the new pin, or with a trust set of both; curl with either CA as its only CA file. After the
// retirement the gateway sends the new CA alone, which the old pin no longer covers.

const initial = createPkiBundle({ trustDomain: 'cross-agent.example.com' });
const active = activateInBundle(prepareInBundle(initial, 'serving-ca', makeRotatingKey('serving-ca')), 'serving-ca');
const retired = retireInBundle(active, 'serving-ca');
const oldPin = installPins(initial).servingCaPin;
const newPin = installPins(active).servingCaPin;
const trustOf = (pins: string[]) => ({ servingCaPins: () => pins }) as unknown as TrustStore;

const servers: https.Server[] = [];
async function gateway(bundle: typeof active): Promise<string> {
  const cert = issueGatewayCertificate(bundle, { sans: ['127.0.0.1'] });
  const server = https.createServer({ cert: cert.chainPem, key: cert.privateKeyPem }, (_req, res) => res.end('{"ok":true}'));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The sessions' and renewals' check of the chain `url` presents, under `pins`. */
function sessionCheck(url: string, pins: string[]): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: Number(port), rejectUnauthorized: false }, () => {
      try {
        resolve(checkGatewayChain(socket, pins, '127.0.0.1').subject);
      } catch (error) {
        reject(error as Error);
      } finally {
        socket.destroy();
      }
    });
    socket.once('error', reject);
  });
}

let during: string;
let after: string;
beforeAll(async () => {
  during = await gateway(active);
  after = await gateway(retired);
});
afterAll(() => servers.forEach((server) => server.close()));

describe('a gateway chain cross-certified during a serving CA rotation', () => {
  it('bcd accepts it under the old pin, the new pin, or a trust set of both', async () => {
    for (const pin of [oldPin, newPin]) expect((await pinnedFetch({ servingCaPin: pin })(`${during}/x`)).status).toBe(200);
    expect((await pinnedFetch({ servingCaPin: oldPin, trust: trustOf([newPin, oldPin]) })(`${during}/x`)).status).toBe(200);
    expect((await pinnedFetch({ servingCaPin: oldPin, trust: trustOf([newPin]) })(`${during}/x`)).status).toBe(200);
  });

  it('the session and renewal check accepts it under either pin', async () => {
    for (const pins of [[oldPin], [newPin], [newPin, oldPin]]) await expect(sessionCheck(during, pins)).resolves.toMatch(/gateway/);
  });

  it('curl verifies it with either CA as its only CA file', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cross-curl-'));
    for (const [name, pem] of [
      ['old.pem', initial.servingCa.certificatePem],
      ['new.pem', active.servingCa.certificatePem],
    ] as const) {
      const file = path.join(dir, name);
      writeFileSync(file, pem);
      const { stdout } = await promisify(execFile)('curl', ['-sS', '--cacert', file, `${during}/x`]);
      expect(stdout).toBe('{"ok":true}');
    }
  });

  it('after the retirement the old pin alone is refused, the new one accepted', async () => {
    await expect(pinnedFetch({ servingCaPin: oldPin })(`${after}/x`)).rejects.toThrow(/no certificate the gateway sent has the key/);
    await expect(sessionCheck(after, [oldPin])).rejects.toThrow(/serving CA does not match/);
    expect((await pinnedFetch({ servingCaPin: newPin })(`${after}/x`)).status).toBe(200);
    await expect(sessionCheck(after, [newPin])).resolves.toMatch(/gateway/);
  });
});

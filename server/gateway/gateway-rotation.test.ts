import http2 from 'node:http2';
import tls from 'node:tls';
import { once } from 'node:events';
import { randomBytes, X509Certificate } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { chainToPem, connectGateway, postToGateway, type ClientIdentity } from '../../agent/renew/gateway-client';
import { buildRenewBody } from '../../agent/renew/renew';
import { loadIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import { spkiPin } from '../../protocol/pins';
import { spawnGateway, type SpawnedGateway } from '../../test/gateway-process';
import { joinThroughRotatingGateway, startRotationApi, type RotationApi } from '../../test/rotation-api';
import { createRotatingPki, type RotatingPki } from '../../test/rotation-pki';
import type { JoinCrypto } from '../pki/issuance/join-crypto';
import { issueGatewayCertificate } from '../pki/issuance/gateway';
import { issueNodeCertificate } from '../pki/issuance/node-certificate';
import { gatewayFilesIn, readGatewayFiles } from './files';
import { voucherFromServingChain } from './gateway';
import { certificatesOf } from './peer';

// A gateway process follows a rotation of the serving CA and the node CA through its credentials call, within
// seconds and without a restart: new handshakes get the new chain, open connections stay, client certificates
// of both node CAs are accepted while both are trusted, its vouching keeps working, and its files are replaced.

const BASE = '/api/compute';
const RENEW = `${BASE}/v1/renew`;
const FOLLOW = { timeout: 20_000, interval: 250 };

let rotating: RotatingPki;
let api: RotationApi;
let gateway: SpawnedGateway;
/** The serving CA pin the gateway is expected to serve (agents check it). */
let servedPin: string;
const target = (pin = servedPin) => ({ gatewayUrl: gateway.url, servingCaPin: pin });

beforeAll(async () => {
  rotating = createRotatingPki();
  api = await startRotationApi(rotating);
  const cert = issueGatewayCertificate(rotating.old, { sans: ['localhost', '127.0.0.1'] });
  gateway = await spawnGateway({
    credentials: { chainPem: cert.chainPem, keyPem: cert.privateKeyPem, nodeCaPem: rotating.old.nodeCa.certificatePem },
    apiUrl: api.url,
  });
  servedPin = rotating.pins.oldServingCa;
}, 60_000);
afterAll(async () => {
  await gateway?.stop();
  await api?.close();
});

/** A client certificate of `crypto`'s node CA for a node no database knows, and its SPIFFE ID. */
function clientOf(crypto: JoinCrypto): { client: ClientIdentity; spiffeId: string } {
  const key = generateNodeKeyAndCsr();
  const nodeId = `node_${randomBytes(6).toString('hex')}`;
  const issued = issueNodeCertificate(crypto.nodeCa, {
    publicKeySpkiDer: key.spkiDer,
    trustDomain: crypto.trustDomain,
    siteId: 'site_rotation',
    nodeId,
    role: 'node',
    notBefore: new Date(),
    ttlSeconds: 3600,
  });
  return {
    client: { keyPem: key.privateKeyPem, certificatePem: chainToPem([issued.der.toString('base64')]) },
    spiffeId: `spiffe://${crypto.trustDomain}/site/site_rotation/node/${nodeId}`,
  };
}

const renewCalls = () =>
  gateway.lines
    .filter((l) => l.startsWith('{"gateway":"call"'))
    .map((l) => JSON.parse(l) as { peer: string; path: string; status: number })
    .filter((l) => l.path === RENEW);

/** The peer the gateway vouched for on one renewal presenting `client`: its SPIFFE ID, or '-' for none. */
async function peerSeen(client: ClientIdentity): Promise<string> {
  const before = renewCalls().length;
  await postToGateway(target(), client, RENEW, '{}');
  await expect.poll(() => renewCalls().length).toBe(before + 1);
  return renewCalls().at(-1)!.peer;
}

/** Joins a machine through the gateway (the join keys never rotate here): its identity, as an agent keeps it. */
async function joinNode(): Promise<LoadedIdentity> {
  return loadIdentity(await joinThroughRotatingGateway(rotating, target()));
}

async function renew(node: LoadedIdentity) {
  const next = generateNodeKeyAndCsr();
  return postToGateway(
    target(),
    { keyPem: node.identity.privateKeyPem, certificatePem: chainToPem([node.identity.certificateChain[0]!]) },
    RENEW,
    buildRenewBody(node, next.csrDer, next.csrSha256, Math.floor(Date.now() / 1000)),
  );
}

/** True when a new handshake presents a chain whose CA has `pin` (and the leaf names 127.0.0.1). */
const handshakeVerifiesUnder = (pin: string) =>
  connectGateway(target(pin), undefined, 5_000).then(
    (socket) => (socket.destroy(), true),
    () => false,
  );

const caPinOf = (pem: string) => spkiPin(certificatesOf(pem)[1]!.publicKey);

describe('a gateway process follows a rotation without a restart', () => {
  const oldClient = () => clientOf(rotating.oldCrypto);
  const nextClient = () => clientOf(rotating.nextCrypto);
  let node: LoadedIdentity;

  it('accepts client certificates of the new node CA once it is prepared, and of the old one still', async () => {
    rotating.phase = 'before';
    // The call is the gateway's own, to the API: an agent cannot make it through the gateway.
    expect((await postToGateway(target(), undefined, `${BASE}/v1/gateway/credentials`, '{}')).status).toBe(404);
    node = await joinNode();
    const early = nextClient();
    expect(await peerSeen(early.client)).toBe('-');
    const old = oldClient();
    expect(await peerSeen(old.client)).toBe(old.spiffeId);

    rotating.phase = 'prepared';
    await expect.poll(async () => peerSeen(early.client), FOLLOW).toBe(early.spiffeId);
    expect(await peerSeen(old.client)).toBe(old.spiffeId);
    // The serving CA in use is still the old one.
    expect(await handshakeVerifiesUnder(rotating.pins.oldServingCa)).toBe(true);
  });

  it('after activation, new handshakes get the new serving chain while an open HTTP/2 session stays', async () => {
    const socket = tls.connect({ host: '127.0.0.1', port: gateway.port, rejectUnauthorized: false, ALPNProtocols: ['h2'] });
    await once(socket, 'secureConnect');
    const openedWith = socket.getPeerX509Certificate()!;
    const session = http2.connect(gateway.url, { createConnection: () => socket });
    const get = () =>
      new Promise<number>((resolve, reject) => {
        const stream = session.request({ ':path': `${BASE}/nowhere`, ':method': 'GET' });
        stream.on('response', (headers) => resolve(Number(headers[':status'])));
        stream.on('error', reject);
        stream.resume();
        stream.end();
      });
    expect(await get()).toBe(404);

    rotating.phase = 'activated';
    await expect.poll(() => handshakeVerifiesUnder(rotating.pins.nextServingCa), FOLLOW).toBe(true);
    servedPin = rotating.pins.nextServingCa;
    // Until the retirement the new CA comes certified by the old one, then the old one: a client that pins only
    // the old CA still accepts the chain.
    expect(await handshakeVerifiesUnder(rotating.pins.oldServingCa)).toBe(true);

    // A new connection still speaks HTTP/2: the swapped context keeps the server's protocols.
    const fresh = tls.connect({ host: '127.0.0.1', port: gateway.port, rejectUnauthorized: false, ALPNProtocols: ['h2'] });
    await once(fresh, 'secureConnect');
    expect(fresh.alpnProtocol).toBe('h2');
    expect(fresh.getPeerX509Certificate()!.verify(new X509Certificate(rotating.next.servingCa.certificatePem).publicKey)).toBe(true);
    fresh.destroy();
    // And its TLS bounds: a TLS 1.2 suite without AEAD is still refused.
    const weak = tls.connect({
      host: '127.0.0.1',
      port: gateway.port,
      rejectUnauthorized: false,
      maxVersion: 'TLSv1.2',
      ciphers: 'ECDHE-ECDSA-AES128-SHA',
    });
    await expect(once(weak, 'secureConnect')).rejects.toThrow();
    weak.destroy();

    // The session opened before the swap is still up, on the chain it was opened with.
    expect(session.closed || session.destroyed).toBe(false);
    expect(await get()).toBe(404);
    expect(openedWith.verify(new X509Certificate(rotating.old.servingCa.certificatePem).publicKey)).toBe(true);
    session.close();
  });

  it('keeps vouching after the swap: a renewal through the gateway is issued', async () => {
    // The API now believes only a vouching by a gateway of the new serving CA (this runtime's servingCaPin).
    const reply = await renew(node);
    expect(reply.status).toBe(200);
    const envelope = JSON.parse(reply.body.toString()) as { body: string };
    expect(JSON.parse(Buffer.from(envelope.body, 'base64url').toString())).toMatchObject({
      status: 'renewed',
      nodeId: node.identity.nodeId,
    });
  });

  it('has replaced its files on disk: a matching key (0600) and chain of the new CA, both node CAs, nothing half-written', async () => {
    const files = gatewayFilesIn(gateway.dir);
    // The files are written after the live swap: wait (bounded) until the chain on disk is the new CA's.
    let stored = await readGatewayFiles(files);
    for (let waited = 0; caPinOf(stored.servingChainPem) !== rotating.pins.nextServingCa && waited < 20_000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      stored = await readGatewayFiles(files);
    }
    expect(caPinOf(stored.servingChainPem)).toBe(rotating.pins.nextServingCa);
    // The leaf, the new CA certified by the old one, the old one.
    expect(certificatesOf(stored.servingChainPem).map((c) => c.raw.toString('base64'))).toEqual([
      certificatesOf(stored.servingChainPem)[0]!.raw.toString('base64'),
      ...rotating.runtime().servingCaChain!.map((pem) => new X509Certificate(pem).raw.toString('base64')),
    ]);
    expect(() => voucherFromServingChain(stored.servingChainPem, stored.servingKeyPem)).not.toThrow();
    expect(
      certificatesOf(stored.nodeCaPem)
        .map((c) => c.raw.toString('base64'))
        .sort(),
    ).toEqual([rotating.nextCrypto.nodeCaCertificate, rotating.oldCrypto.nodeCaCertificate].sort());
    expect((await stat(files.key)).mode & 0o777).toBe(0o600);
    expect((await readdir(gateway.dir)).sort()).toEqual(['chain.pem', 'key.pem', 'node-ca.pem']);
    const leaf = new X509Certificate(stored.servingChainPem);
    expect(leaf.subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1');
  });

  it('refuses client certificates of the old node CA once it is retired, and still accepts the new one', async () => {
    rotating.phase = 'retired';
    const old = oldClient();
    await expect.poll(async () => peerSeen(old.client), FOLLOW).toBe('-');
    const next = nextClient();
    expect(await peerSeen(next.client)).toBe(next.spiffeId);
  });

  it('once the old serving CA is retired, sends the new CA alone after its leaf: the old pin no longer covers it', async () => {
    await expect.poll(() => handshakeVerifiesUnder(rotating.pins.oldServingCa), FOLLOW).toBe(false);
    expect(await handshakeVerifiesUnder(rotating.pins.nextServingCa)).toBe(true);
    expect(certificatesOf((await readGatewayFiles(gatewayFilesIn(gateway.dir))).servingChainPem)).toHaveLength(2);
  });

  it('a restart serves the files it wrote, even with the API unreachable', async () => {
    const stored = await readGatewayFiles(gatewayFilesIn(gateway.dir));
    const restarted = await spawnGateway({
      credentials: { chainPem: stored.servingChainPem, keyPem: stored.servingKeyPem, nodeCaPem: stored.nodeCaPem },
      apiUrl: 'http://127.0.0.1:9',
    });
    try {
      const probe = await connectGateway({ gatewayUrl: restarted.url, servingCaPin: rotating.pins.nextServingCa }, undefined, 5_000);
      probe.destroy();
    } finally {
      await restarted.stop();
    }
  });
});

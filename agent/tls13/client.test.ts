import { generateKeyPairSync, sign, X509Certificate, type KeyObject } from 'node:crypto';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePki } from '../../test/pki/fixtures';
import { issueGatewayCertificate } from '../../server/pki/issuance/gateway';
import { issueNodeCertificate } from '../../server/pki/issuance/node-certificate';
import { spkiPin } from '../../protocol/pins';
import { checkGatewayChainDer } from '../renew/gateway-client';
import { connectTls13, type TlsClientSigner } from './client';
import { SCHEME } from './handshake';

const { bundle, joinCrypto } = fixturePki();
const gateway = issueGatewayCertificate(bundle, { sans: ['localhost', '127.0.0.1'] });
const servingCaPin = spkiPin(new X509Certificate(bundle.servingCa.certificatePem).publicKey);

function nodeIdentity(nodeId: string) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const cert = issueNodeCertificate(joinCrypto.nodeCa, {
    publicKeySpkiDer: publicKey.export({ type: 'spki', format: 'der' }),
    trustDomain: 'compute.example.com',
    siteId: 'site-1',
    nodeId,
    role: 'node',
    notBefore: new Date(),
    ttlSeconds: 3600,
  });
  return { privateKey, der: cert.der };
}

/** A software signer, counting its signatures: what the TPM signer does, with a KeyObject. */
function softwareSigner(chain: Buffer[], key: KeyObject): TlsClientSigner & { calls: number } {
  const signer = {
    calls: 0,
    certificateChain: chain,
    scheme: SCHEME.ecdsaSecp256r1Sha256,
    sign: async (content: Buffer) => {
      signer.calls += 1;
      return sign('sha256', content, key);
    },
  };
  return signer;
}

const node = nodeIdentity('node-a');
let server: https.Server;
let h2server: http2.Http2SecureServer;
let port: number;
let requests = 0;
let h2port: number;
const serverOptions = {
  cert: gateway.chainPem,
  key: gateway.privateKeyPem,
  ca: bundle.nodeCa.certificatePem,
  requestCert: true,
  rejectUnauthorized: true,
  minVersion: 'TLSv1.3' as const,
};

/** Answers with what the server saw of the client: its certificate's URI, the protocol, and the body's size. */
function describePeer(socket: tls.TLSSocket, body: Buffer) {
  const peer = socket.getPeerX509Certificate();
  return JSON.stringify({
    uri: peer?.subjectAltName,
    protocol: socket.getProtocol(),
    cipher: socket.getCipher().name,
    received: body.length,
  });
}

const listen = (s: https.Server | http2.Http2SecureServer) =>
  new Promise<number>((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port)));

beforeAll(async () => {
  server = https.createServer(serverOptions, (req, res) => {
    requests += 1;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const padding = req.headers['x-answer-size'] ? Buffer.alloc(Number(req.headers['x-answer-size']), 'z').toString() : '';
      res.end(describePeer(req.socket as tls.TLSSocket, body) + padding);
    });
  });
  h2server = http2.createSecureServer({ ...serverOptions, allowHTTP1: true }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () =>
      res.end(JSON.stringify({ version: req.httpVersion, peer: describePeer(req.socket as tls.TLSSocket, Buffer.concat(chunks)) })),
    );
  });
  [port, h2port] = await Promise.all([listen(server), listen(h2server)]);
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
  await new Promise((r) => h2server.close(r));
});

const verifyServerChain = (chain: readonly Buffer[]) => void checkGatewayChainDer(chain, servingCaPin, '127.0.0.1');

function post(socket: import('node:stream').Duplex, body: Buffer, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const request = http.request(
      {
        method: 'POST',
        host: '127.0.0.1',
        path: '/echo',
        headers: { 'content-length': body.length, connection: 'close', ...headers },
        createConnection: () => socket as never,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (c: Buffer) => chunks.push(c));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

describe('the TLS 1.3 client against Node’s TLS server', () => {
  it('does mutual TLS with an asynchronous signer and carries HTTP/1.1, bodies larger than a record both ways', async () => {
    const signer = softwareSigner([node.der], node.privateKey);
    const socket = await connectTls13({ host: '127.0.0.1', port, serverName: '127.0.0.1', alpn: ['http/1.1'], signer, verifyServerChain });
    expect(socket.alpnProtocol).toBe('http/1.1');
    expect(signer.calls).toBe(1);
    const body = Buffer.alloc(100_000, 'a');
    const answer = await post(socket, body, { 'x-answer-size': '70000' });
    expect(answer.status).toBe(200);
    const seen = JSON.parse(answer.body.slice(0, answer.body.indexOf('}') + 1));
    expect(seen).toEqual({
      uri: 'URI:spiffe://compute.example.com/site/site-1/node/node-a',
      protocol: 'TLSv1.3',
      cipher: 'TLS_AES_128_GCM_SHA256',
      received: 100_000,
    });
    expect(answer.body.length).toBe(answer.body.indexOf('}') + 1 + 70_000);
  });

  it('carries HTTP/2 (ALPN h2) for the session, and HTTP/1.1 when only that is offered', async () => {
    const signer = softwareSigner([node.der], node.privateKey);
    const socket = await connectTls13({
      host: '127.0.0.1',
      port: h2port,
      serverName: 'localhost',
      alpn: ['h2'],
      signer,
      verifyServerChain,
    });
    expect(socket.alpnProtocol).toBe('h2');
    const session = http2.connect('https://localhost', { createConnection: () => socket });
    const answer = await new Promise<string>((resolve, reject) => {
      const stream = session.request({ ':method': 'POST', ':path': '/session' });
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => resolve(Buffer.concat(chunks).toString()));
      stream.on('error', reject);
      stream.end('hello');
    });
    session.close();
    expect(JSON.parse(answer)).toMatchObject({ version: '2.0' });
    expect(JSON.parse(JSON.parse(answer).peer)).toMatchObject({
      uri: 'URI:spiffe://compute.example.com/site/site-1/node/node-a',
      received: 5,
    });

    const h1 = await connectTls13({ host: '127.0.0.1', port: h2port, alpn: ['http/1.1'], signer, verifyServerChain });
    expect(h1.alpnProtocol).toBe('http/1.1');
    expect(JSON.parse((await post(h1, Buffer.from('x'))).body)).toMatchObject({ version: '1.1' });
  });

  it('refuses a server outside the pin before anything is signed', async () => {
    const signer = softwareSigner([node.der], node.privateKey);
    const otherPin = spkiPin(generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey);
    await expect(
      connectTls13({
        host: '127.0.0.1',
        port,
        signer,
        verifyServerChain: (chain) => void checkGatewayChainDer(chain, otherPin, '127.0.0.1'),
      }),
    ).rejects.toThrow(/does not match the pinned servingCaPin/);
    await expect(
      connectTls13({
        host: '127.0.0.1',
        port,
        signer,
        verifyServerChain: (chain) => void checkGatewayChainDer(chain, servingCaPin, 'gateway.example'),
      }),
    ).rejects.toThrow(/does not name gateway.example/);
    expect(signer.calls).toBe(0);
  });

  it('is refused by the server when the signature is not by the certificate’s key, or the certificate is not the CA’s', async () => {
    const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const signedByAnother = connectTls13({ host: '127.0.0.1', port, signer: softwareSigner([node.der], stranger), verifyServerChain });
    await expect(signedByAnother.then((socket) => post(socket, Buffer.from('x')))).rejects.toThrow(/alert 51 \(decrypt_error\)/);
    // A self-made certificate for the same key: not under the node CA.
    const { X509CertificateGenerator } = await import('../../test/pki/x509');
    const webKey = await crypto.subtle.importKey(
      'pkcs8',
      node.privateKey.export({ type: 'pkcs8', format: 'der' }),
      { name: 'ECDSA', namedCurve: 'P-256' },
      false,
      ['sign'],
    );
    const webPublic = await crypto.subtle.importKey(
      'spki',
      new X509Certificate(node.der).publicKey.export({ type: 'spki', format: 'der' }),
      { name: 'ECDSA', namedCurve: 'P-256' },
      true,
      ['verify'],
    );
    const selfMade = await X509CertificateGenerator.createSelfSigned({
      name: 'CN=not a node',
      keys: { privateKey: webKey, publicKey: webPublic },
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 3_600_000),
    });
    const outsider = connectTls13({
      host: '127.0.0.1',
      port,
      signer: softwareSigner([Buffer.from(selfMade.rawData)], node.privateKey),
      verifyServerChain,
    });
    // Node's server drops a connection whose certificate does not chain (no alert): the request never reaches it.
    const answered = requests;
    await expect(outsider.then((socket) => post(socket, Buffer.from('x')))).rejects.toThrow(/socket hang up|alert/);
    expect(requests).toBe(answered);
  });

  it('without a signer answers a CertificateRequest with an empty Certificate, which this server refuses', async () => {
    const anonymous = connectTls13({ host: '127.0.0.1', port, verifyServerChain });
    await expect(anonymous.then((socket) => post(socket, Buffer.from('x')))).rejects.toThrow(/alert 116 \(certificate_required\)/);
  });
});

import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { signedBy, type trustBody, type TrustGeneration } from './trust-fixture';
import { parseCsr } from '../server/join/crypto/csr';
import { issueGatewayCertificate } from '../server/pki/issuance/gateway';
import { issueNodeCertificate } from '../server/pki/issuance/node-certificate';
import { joinCryptoFromBundle } from '../server/pki/issuance/join-crypto';
import { writeIdentity } from '../agent/identity-store';
import { generateNodeKeyAndCsr } from '../agent/keys';

export const DOMAIN = 'rotation.example.com';
export const NODE = 'node_trust1';
const SITE = 'site_trust1';

/**
 * A gateway as far as an agent sees it (protocol.md "Sessions"): the well-known document, Hello answered with an
 * event stream whose events the test scripts (signed here with the bundles' own keys), and renewals.
 */
export class FakeGateway {
  server!: http2.Http2SecureServer;
  url = '';
  hellos: Array<{ trustVersion?: number; commandKinds?: unknown }> = [];
  /** The events after the welcome, per Hello (by its index). */
  events: (hello: number) => Array<[string, object]> = () => [];
  welcomeSigners: TrustGeneration[];
  wellKnown: object;
  renew: ((body: { csr: string }) => object) | null = null;
  streams: http2.ServerHttp2Stream[] = [];
  /** The connection each Hello came on, by its index. */
  helloConnections: http2.Http2Session[] = [];
  /** Command results posted (protocol.md "Commands"), with the connection each came on. */
  results: Array<{ commandId: string; body: unknown; connection: http2.Http2Session }> = [];
  /** The status a result is answered with. */
  resultStatus = 204;
  sessions = new Set<http2.ServerHttp2Session>();

  constructor(signer: TrustGeneration) {
    this.welcomeSigners = [signer];
    this.wellKnown = { join: { signingCertificate: signer.signingCertificate, encryptionJwk: signer.encryptionJwk } };
  }

  async start(serving: TrustGeneration) {
    const cert = issueGatewayCertificate(serving.bundle, { sans: ['127.0.0.1'] });
    this.server = http2.createSecureServer({
      cert: cert.chainPem,
      key: cert.privateKeyPem,
      allowHTTP1: true,
      requestCert: true,
      rejectUnauthorized: false,
    });
    this.server.on('session', (session) => {
      this.sessions.add(session);
      session.once('close', () => this.sessions.delete(session));
    });
    this.server.on('request', (req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk));
      req.on('end', () => {
        if (req.url === '/api/compute/.well-known/better-compute') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(this.wellKnown));
        } else if (req.url === '/api/compute/v1/session') {
          const index = this.hellos.push(JSON.parse(text)) - 1;
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          const welcome = { status: 'welcome', nodeId: NODE, sessionId: `sess_${index}`, serverTime: 0, heartbeatSeconds: 30 };
          res.write(`event: welcome\ndata: ${JSON.stringify(signedBy(welcome, this.welcomeSigners))}\n\n`);
          for (const [type, data] of this.events(index)) res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
          this.streams.push(res.stream);
          this.helloConnections.push(req.stream.session!);
        } else if (/^\/api\/compute\/v1\/commands\/cmd_[A-Za-z0-9]+\/result$/.test(req.url)) {
          this.results.push({ commandId: req.url.split('/')[5]!, body: JSON.parse(text), connection: req.stream.session! });
          res.writeHead(this.resultStatus).end();
        } else if (req.url === '/api/compute/v1/renew' && this.renew) {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(this.renew(JSON.parse(text))));
        } else res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Ends every open session stream (the agent reconnects). */
  endSessions() {
    for (const stream of this.streams.splice(0)) stream.close();
  }

  async stop() {
    this.endSessions();
    for (const session of this.sessions) session.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A certificate for {@link NODE} of `issuer`'s node CA, to the key `publicKeySpkiDer`, with its chain (leaf first). */
function nodeCertificate(issuer: TrustGeneration, publicKeySpkiDer: Buffer) {
  const crypto = joinCryptoFromBundle(issuer.bundle);
  const leaf = issueNodeCertificate(crypto.nodeCa, {
    role: 'node',
    trustDomain: DOMAIN,
    siteId: SITE,
    nodeId: NODE,
    publicKeySpkiDer,
    notBefore: new Date(),
    ttlSeconds: 3600,
  });
  return { serialHex: leaf.serialHex, chain: [leaf.der.toString('base64'), crypto.nodeCaCertificate] };
}

/** A node identity issued by `issuer`'s node CA, written to `dir`. */
export async function joinedNode(dir: string, issuer: TrustGeneration) {
  const keys = generateNodeKeyAndCsr();
  await writeIdentity(dir, {
    privateKeyPem: keys.privateKeyPem,
    certificateChain: nodeCertificate(issuer, keys.spkiDer).chain,
    nodeId: NODE,
    siteId: SITE,
    trustDomain: DOMAIN,
    role: 'node',
  });
}

/**
 * The answer to a renewal (`body`, as FakeGateway.renew receives it), as JoinService renews: a certificate of
 * `issuer`'s node CA for the CSR's key, carrying the trust set `trust`, signed by `signers`. With the new serial.
 */
export function renewedAnswer(
  body: { csr: string },
  issuer: TrustGeneration,
  trust: ReturnType<typeof trustBody>,
  signers: TrustGeneration[],
) {
  const csr = parseCsr(Buffer.from(body.csr, 'base64'));
  const { serialHex, chain } = nodeCertificate(issuer, csr.spkiDer);
  const { status: _s, nodeId: _n, joinEncryptionJwks: _j, commandTrustBundle, ...pins } = trust;
  const answer = {
    status: 'renewed',
    nodeId: NODE,
    certificateChain: chain,
    commandTrustBundle,
    csrSha256: csr.csrSha256,
    trustDomain: DOMAIN,
    siteId: SITE,
    role: 'node',
    trust: pins,
  };
  return { serialHex, envelope: signedBy(answer, signers) };
}

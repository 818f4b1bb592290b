import http from 'node:http';
import https from 'node:https';
import type tls from 'node:tls';
import { constants, createPrivateKey, X509Certificate } from 'node:crypto';
import { readLeafNames } from '../../agent/certificate-names';
import { readBody } from '../http/read-body';
import { certificatesOf, isNodeCertificate } from './peer';
import { GATEWAY_CIPHERS, GATEWAY_LIMITS, type GatewayLimits } from './limits';
import { vouchHeaders, type GatewayVoucher } from '../renew/vouch';
import { relayWellKnown, wellKnownPath } from './well-known';
import { METRICS_PATH, serveMetrics } from '../metrics/endpoint';
import { createGatewayMetrics } from '../metrics/gateway-metrics';
import { newRequestId, REQUEST_ID_HEADER } from '../metrics/request-log';

/**
 * The gateway: the agents' TLS endpoint. It terminates TLS with the serving chain, asks for (does not require)
 * a client certificate and verifies it against the node CA, and relays `/v1/join` and `/v1/renew` under
 * `basePath` to the API with a signed vouching for the peer certificate. It holds no JoinService key: its only
 * key is its own serving key, which can vouch for a peer but neither open a seal nor issue a certificate.
 */
export interface GatewayOptions {
  /** PEM: the leaf, then the serving CA. */
  servingChainPem: string;
  /** PEM PKCS#8 of the leaf's key. */
  servingKeyPem: string;
  /** PEM of the node CA that client certificates must chain to. */
  nodeCaPem: string;
  /** Where the API listens, e.g. http://127.0.0.1:3000. */
  apiUrl: string;
  basePath: string;
  log?: (line: string) => void;
  /** Upper bound of a relayed body (the API's limit). */
  maxBodyBytes?: number;
  /** Timeouts and the connection cap; {@link GATEWAY_LIMITS} for what is absent. */
  limits?: Partial<GatewayLimits>;
}

const HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };
const answer = (res: http.ServerResponse, status: number, body: object, extra: Record<string, string> = {}) => {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { ...HEADERS, ...extra, 'content-length': bytes.length }).end(bytes);
};

function splitPem(pem: string): Buffer[] {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g)].map((m) => Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64'));
}

/** The vouching credential: the serving key and the chain JoinService checks against the serving CA pin. */
export function voucherFromServingChain(chainPem: string, keyPem: string): GatewayVoucher {
  const chain = splitPem(chainPem);
  if (chain.length < 2) throw new Error('The gateway chain must hold the leaf and then the serving CA');
  const key = createPrivateKey(keyPem);
  if (!new X509Certificate(chain[0]!).checkPrivateKey(key)) throw new Error('The gateway key does not match its certificate');
  return { key, chainB64: [chain[0]!.toString('base64'), chain[chain.length - 1]!.toString('base64')] };
}

/** The peer's SPIFFE ID for the log (its first URI SAN), or '-' when none was presented or verified. */
function peerName(raw: Buffer | undefined): string {
  if (!raw) return '-';
  try {
    return readLeafNames(raw).uris[0] ?? '-';
  } catch {
    return '-';
  }
}

/**
 * Log lines to stdout, written together once per turn of the event loop: one write for the calls that ended
 * together instead of one each.
 */
function stdoutLines(): (line: string) => void {
  let pending = '';
  return (line) => {
    if (!pending) setImmediate(() => {
      process.stdout.write(pending);
      pending = '';
    });
    pending += line + '\n';
  };
}

/** Creates the gateway's HTTPS server (not yet listening). */
export function createGateway(options: GatewayOptions): https.Server {
  const voucher = voucherFromServingChain(options.servingChainPem, options.servingKeyPem);
  const log = options.log ?? stdoutLines();
  const api = new URL(options.apiUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const paths = new Set([`${options.basePath}/v1/join`, `${options.basePath}/v1/renew`]);
  const limit = options.maxBodyBytes ?? 64 * 1024;
  const nodeCas = certificatesOf(options.nodeCaPem);
  const limits = { ...GATEWAY_LIMITS, ...options.limits };
  const metrics = createGatewayMetrics(paths);

  const server = https.createServer(
    {
      cert: options.servingChainPem,
      key: options.servingKeyPem,
      ca: options.nodeCaPem,
      requestCert: true,
      // Joins have no certificate yet; a presented one is believed only when `authorized` (it chains to the node CA).
      rejectUnauthorized: false,
      minVersion: 'TLSv1.2',
      ciphers: GATEWAY_CIPHERS,
      // A socket that has not finished its handshake in time is closed (tlsClientError below); after the
      // handshake, the header and request bounds take over.
      handshakeTimeout: limits.handshakeMs,
      headersTimeout: limits.headersMs,
      requestTimeout: limits.requestMs,
      connectionsCheckingInterval: limits.checkIntervalMs,
      // No session tickets: an agent never resumes (each renewal presents a new certificate, and a resumed
      // session would carry the identity of an earlier handshake), so minting them was wasted work, about a
      // sixth of the gateway's TLS cost per connection in bench:renew.
      secureOptions: constants.SSL_OP_NO_TICKET,
    },
    (req, res) => {
      const started = performance.now();
      const socket = req.socket as tls.TLSSocket;
      // getPeerX509Certificate, not getPeerCertificate: the legacy object and a second parse of it cost about
      // a fifth of the gateway's time per call in bench:renew's profile.
      const peer = socket.getPeerX509Certificate();
      // An expired certificate of the node CA is still vouched for: JoinService refuses it as `expired`, the
      // reason an operator needs to see, rather than as a missing certificate. Which one it is, the gateway
      // verifies itself (dates aside), never from authorizationError: that names only OpenSSL's last
      // complaint, and an expired self-signed certificate naming any node reads CERT_HAS_EXPIRED too.
      const chained = peer !== undefined && (socket.authorized || isNodeCertificate(peer, nodeCas));
      const raw = chained ? peer.raw : undefined;
      const pathname = (req.url ?? '/').split('?', 1)[0]!;
      // The id goes to the API and into both log lines; the agent's answers carry no header of it, since
      // protocol.md fixes their headers as well as their bytes.
      const requestId = newRequestId();
      // One line per call: who, where, the answer and how long; never a body.
      res.on('finish', () => {
        metrics.request(pathname, res.statusCode);
        const ms = Math.round((performance.now() - started) * 10) / 10;
        log(JSON.stringify({ gateway: 'call', requestId, method: req.method, peer: peerName(raw), path: pathname, status: res.statusCode, ms }));
      });
      // An installed bcd knows only the gateway: it reads the join keys here, and checks them against its pins.
      if (pathname === wellKnownPath(options.basePath)) return relayWellKnown(req, res, { api, agent, path: pathname });
      if (pathname === METRICS_PATH) return void serveMetrics(req, res, () => metrics.registry);
      if (!paths.has(pathname)) return answer(res, 404, { code: 'NOT_FOUND', message: 'Not found' });
      if (req.method !== 'POST') return answer(res, 405, { code: 'INVALID_ARGUMENT', message: 'Use POST' }, { allow: 'POST' });
      void readBody(req, limit).then(
        (body) => {
          if (!body) return answer(res, 413, { code: 'INVALID_ARGUMENT', message: 'The body is too large' });
          const headers = { ...vouchHeaders(voucher, raw ?? null, body, pathname), 'content-type': 'application/json', 'content-length': String(body.length), [REQUEST_ID_HEADER]: requestId };
          const relay = http.request(
            { protocol: api.protocol, hostname: api.hostname, port: api.port, method: 'POST', path: pathname, headers, agent, timeout: 60_000 },
            (upstream) => {
              const chunks: Buffer[] = [];
              upstream.on('data', (chunk: Buffer) => chunks.push(chunk));
              upstream.on('end', () => {
                const bytes = Buffer.concat(chunks);
                res.writeHead(upstream.statusCode ?? 502, { ...HEADERS, 'content-length': bytes.length }).end(bytes);
              });
              upstream.on('error', () => res.destroy());
            },
          );
          relay.on('timeout', () => relay.destroy(new Error('timeout')));
          // The API is down or restarting: a clear 503 the agent retries, never a crash.
          relay.on('error', () => {
            if (!res.headersSent) answer(res, 503, { code: 'INVALID_STATE', message: 'The control plane is unavailable; retry' }, { 'retry-after': '2' });
          });
          relay.end(body);
        },
        () => res.destroy(),
      );
    },
  );
  server.maxConnections = limits.maxConnections;
  // A client that breaks off its handshake, or runs out of time for it, must not take the process down (it is
  // counted, not logged).
  server.on('tlsClientError', (_error, socket) => socket.destroy());
  metrics.watch(server);
  server.on('clientError', (_error, socket) => socket.destroy());
  return server;
}

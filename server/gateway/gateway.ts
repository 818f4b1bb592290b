import http from 'node:http';
import http2 from 'node:http2';
import type tls from 'node:tls';
import { readNodeBody } from '../http/body';
import { NodeCaRecheck } from './node-ca-recheck';
import { certificatesOf, isNodeCertificate } from './peer';
import { GATEWAY_LIMITS, type GatewayLimits } from './limits';
import { secureContextOptions, voucherFromServingChain, type GatewayCredentials } from './credentials';
import { WellKnownRelay, wellKnownPath } from './well-known';
import { addressBucket } from '../../protocol/address-bucket';
import { METRICS_PATH, serveMetrics } from '../metrics/endpoint';
import { createGatewayMetrics } from '../metrics/gateway-metrics';
import { REQUEST_ID_HEADER, requestIdOf } from '../metrics/request-log';
import { MAX_HELLO_BODY_BYTES, SESSION_ACCEPTANCE_PATH, SESSION_PATH, SESSION_REFUSED } from '../../protocol/session-wire';
import { COMMAND_RESULT_ROUTE, MAX_COMMAND_RESULT_BODY_BYTES, RESULT_REFUSED } from '../../protocol/command-wire';
import { JOIN_REFUSED } from '../../protocol/join-wire';
import { RENEW_REFUSED } from '../../protocol/renew-wire';
import { SITE_AGENT_REFUSED, SITE_DISCOVERY_TOKEN_PATH, SITE_REDEEM_PATH } from '../../protocol/site-agent-wire';
import { SessionHub } from './session-hub';
import { ApiRelay, RELAY_BOUNDS, type RelayBounds } from './relay';
import { apiWatch } from './api-watch';
import { callerAddressOf, peerName, stdoutLines } from './call-log';
import { trackConnections, type ConnectionStats } from './connections';

export { voucherFromServingChain, type GatewayCredentials };

/**
 * The gateway: the agents' TLS endpoint. It terminates TLS with the serving chain, asks for (does not require)
 * a client certificate and verifies it against the node CA, and relays `/v1/join` and `/v1/renew` under
 * `basePath` to the API with a signed vouching for the peer certificate, and holds sessions (`/v1/session`,
 * session-hub.ts). It speaks HTTP/2 (ALPN `h2`) and HTTP/1.1, so an agent renews on its session's connection. It holds no JoinService key: its only
 * key is its own serving key, which can vouch for a peer but neither open a seal nor issue a certificate.
 */
interface GatewayOptions extends GatewayCredentials {
  /** Where the API listens, e.g. http://127.0.0.1:3000. */
  apiUrl: string;
  basePath: string;
  log?: (line: string) => void;
  /** Upper bound of a relayed body (the API's limit). */
  maxBodyBytes?: number;
  /** Timeouts and the connection cap; {@link GATEWAY_LIMITS} for what is absent. */
  limits?: Partial<GatewayLimits>;
  /** Sockets to the API and calls that may wait for one ({@link RELAY_BOUNDS}). */
  relay?: Partial<RelayBounds>;
  /** Well-known documents per client address and minute, in this process (600). */
  wellKnownPerAddress?: number;
}

const HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };
const RELAY_BUSY = { code: 'INVALID_STATE', message: 'The control plane is busy; retry' };
type GatewayRequest = http.IncomingMessage | http2.Http2ServerRequest;
type GatewayResponse = http.ServerResponse | http2.Http2ServerResponse;
const answer = (res: GatewayResponse, status: number, body: object, extra: Record<string, string> = {}) => {
  const bytes = Buffer.from(JSON.stringify(body));
  (res as http.ServerResponse).writeHead(status, { ...HEADERS, ...extra, 'content-length': bytes.length }).end(bytes);
};

/**
 * The gateway's server, with its sessions, the count of TLS connections it accepted and of sockets it closed
 * at accept because `maxHandshakes` handshakes were already under way.
 */
export type GatewayServer = http2.Http2SecureServer & {
  sessions: SessionHub;
  /** The credentials served now. */
  credentials(): GatewayCredentials;
  /**
   * Serves new credentials from the next handshake on: the TLS context (chain, key, the node CAs asked for),
   * the vouching credential and the node CAs a client certificate is checked against. Connections and
   * sessions already open keep theirs. Throws, changing nothing, when the key does not match the chain.
   */
  updateCredentials(next: GatewayCredentials): void;
  /**
   * How to ask the API for the credentials now (the follower's call), for a client certificate of no node CA
   * held: it is checked again against what the API answers. Without it, such a certificate is vouched for no one.
   */
  onUnknownNodeCa(refresh: () => Promise<unknown>): void;
  /** The relay's calls to the API (its `pending` count). */
  relay: ApiRelay;
  stats: ConnectionStats;
  shutdown(): Promise<void>;
};

/** Creates the gateway's server (not yet listening): HTTP/2 and HTTP/1.1 over TLS on one port. */
export function createGateway(options: GatewayOptions): GatewayServer {
  const voucher = voucherFromServingChain(options.servingChainPem, options.servingKeyPem);
  let credentials: GatewayCredentials = {
    servingChainPem: options.servingChainPem,
    servingKeyPem: options.servingKeyPem,
    nodeCaPem: options.nodeCaPem,
  };
  const log = options.log ?? stdoutLines();
  const api = new URL(options.apiUrl);
  const relay = new ApiRelay(api, voucher, { ...RELAY_BOUNDS, ...options.relay });
  const relayToApi = relay.call;
  const agent = relay.agent;
  const paths = new Set([
    `${options.basePath}/v1/join`,
    `${options.basePath}/v1/renew`,
    `${options.basePath}${SESSION_PATH}`,
    `${options.basePath}${SESSION_ACCEPTANCE_PATH}`,
    `${options.basePath}${SITE_DISCOVERY_TOKEN_PATH}`,
    `${options.basePath}${SITE_REDEEM_PATH}`,
  ]);
  const sessionPath = `${options.basePath}${SESSION_PATH}`;
  // A node's command result (`…/v1/commands/{commandId}/result`), relayed on its session's connection.
  const isCommandResult = (pathname: string) =>
    pathname.startsWith(options.basePath) && COMMAND_RESULT_ROUTE.test(pathname.slice(options.basePath.length));
  const joinPath = `${options.basePath}/v1/join`;
  const renewPath = `${options.basePath}/v1/renew`;
  const limit = options.maxBodyBytes ?? 64 * 1024;
  let nodeCas = certificatesOf(options.nodeCaPem);
  const recheck = new NodeCaRecheck(() => nodeCas);
  const limits = { ...GATEWAY_LIMITS, ...options.limits };
  const metrics = createGatewayMetrics(paths);
  const wellKnown = new WellKnownRelay({
    api,
    agent,
    path: wellKnownPath(options.basePath),
    perAddress: options.wellKnownPerAddress ?? 600,
  });

  const sessions = new SessionHub(relayToApi, options.basePath, apiWatch(api, relay));

  const server = http2.createSecureServer(
    {
      allowHTTP1: true,
      ...secureContextOptions(credentials),
      requestCert: true,
      // Joins have no certificate yet; a presented one is believed only when `authorized` (it chains to the node CA).
      rejectUnauthorized: false,
      // A socket that has not finished its handshake in time is closed (tlsClientError below); after the
      // handshake, the header and request bounds take over.
      handshakeTimeout: limits.handshakeMs,
      // Streams at once per HTTP/2 connection (limits.ts): Node's default is unbounded.
      settings: { maxConcurrentStreams: limits.maxConcurrentStreams },
    },
    (req: GatewayRequest, res: GatewayResponse) => {
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
      let raw = chained ? peer.raw : undefined;
      const pathname = (req.url ?? '/').split('?', 1)[0]!;
      // The id goes to the API and into both log lines; the agent's answers carry no header of it, since
      // protocol.md fixes their headers as well as their bytes. The agent's own (well-formed) id is kept, so
      // its request line, this one and the API's share it.
      const requestId = requestIdOf(req.headers[REQUEST_ID_HEADER]);
      // One line per call: who, where, the answer and how long; never a body.
      res.on('finish', () => {
        metrics.request(pathname, res.statusCode);
        const ms = Math.round((performance.now() - started) * 10) / 10;
        log(
          JSON.stringify({
            gateway: 'call',
            requestId,
            method: req.method,
            peer: peerName(raw),
            path: pathname,
            status: res.statusCode,
            ms,
          }),
        );
      });
      // An installed bcd knows only the gateway: it reads the join keys here, and checks them against its pins.
      if (pathname === wellKnownPath(options.basePath))
        return wellKnown.serve(
          req as http.IncomingMessage,
          res as http.ServerResponse,
          addressBucket(callerAddressOf(socket.remoteAddress) ?? 'unknown'),
        );
      if (pathname === METRICS_PATH)
        return void serveMetrics(req as http.IncomingMessage, res as http.ServerResponse, () => metrics.registry);
      const isResult = isCommandResult(pathname);
      if (!paths.has(pathname) && !isResult) return answer(res, 404, { code: 'NOT_FOUND', message: 'Not found' });
      if (req.method !== 'POST') return answer(res, 405, { code: 'INVALID_ARGUMENT', message: 'Use POST' }, { allow: 'POST' });
      const isHello = pathname === sessionPath;
      // Past the relay's waiting bound a call is answered at once, before its body is read (Hellos have the
      // session hub's own bounds).
      if (!isHello && relay.full) return answer(res, 503, RELAY_BUSY, { 'retry-after': '2' });
      void readNodeBody(
        req as http.IncomingMessage,
        isHello ? MAX_HELLO_BODY_BYTES : isResult ? MAX_COMMAND_RESULT_BODY_BYTES : limit,
      ).then(
        async (body) => {
          // A certificate of a node CA the API trusts since the gateway last asked (node-ca-recheck.ts).
          if (body && peer && !raw && (await recheck.chains(peer))) raw = peer.raw;
          // An oversized body is refused like any other call of its path (protocol.md: the uniform bytes).
          if (!body) {
            const refused =
              pathname === joinPath
                ? JOIN_REFUSED
                : pathname === renewPath
                  ? RENEW_REFUSED
                  : pathname.startsWith(`${options.basePath}/v1/site/`)
                    ? SITE_AGENT_REFUSED
                    : isResult
                      ? RESULT_REFUSED
                      : SESSION_REFUSED;
            return void (res as http.ServerResponse)
              .writeHead(refused.status, { ...HEADERS, 'content-length': refused.body.length })
              .end(refused.body);
          }
          if (isHello) return void sessions.hello(res, raw ?? null, body, raw ? Date.parse(peer!.validTo) : null);
          relayToApi(
            pathname,
            body,
            raw ?? null,
            requestId,
            pathname === joinPath ? callerAddressOf(socket.remoteAddress) : undefined,
          ).then(
            (reply) => {
              if (!res.destroyed)
                (res as http.ServerResponse).writeHead(reply.status, { ...HEADERS, 'content-length': reply.body.length }).end(reply.body);
            },
            // The API is down or restarting: a clear 503 the agent retries, never a crash.
            () => {
              if (!res.headersSent)
                answer(res, 503, { code: 'INVALID_STATE', message: 'The control plane is unavailable; retry' }, { 'retry-after': '2' });
            },
          );
        },
        () => res.destroy(),
      );
    },
  ) as GatewayServer;
  // HTTP/1.1 connections take the API's header and request bounds (the http2 server hands them to Node's
  // HTTP/1 server code, which reads these fields); HTTP/2 streams are bounded by the handshake and connection
  // limits and by maxConcurrentStreams per connection.
  Object.assign(server, {
    headersTimeout: limits.headersMs,
    requestTimeout: limits.requestMs,
    connectionsCheckingInterval: limits.checkIntervalMs,
  });
  server.sessions = sessions;
  server.credentials = () => credentials;
  server.updateCredentials = (next) => {
    const nextVoucher = voucherFromServingChain(next.servingChainPem, next.servingKeyPem);
    const nextNodeCas = certificatesOf(next.nodeCaPem);
    if (nextNodeCas.length === 0) throw new Error('The gateway needs at least one node CA');
    // Every option of the context again: setSecureContext replaces the whole context, ciphers and tickets included.
    server.setSecureContext(secureContextOptions(next));
    relay.setVoucher(nextVoucher);
    nodeCas = nextNodeCas;
    credentials = { ...next };
  };
  server.relay = relay;
  server.onUnknownNodeCa = (refresh) => void (recheck.refresh = refresh);
  const connections = trackConnections(server, limits);
  server.stats = connections.stats;
  server.shutdown = () =>
    new Promise<void>((resolve) => {
      sessions.stop();
      server.close(() => resolve());
      connections.destroyAll();
    });
  server.maxConnections = limits.maxConnections;
  // A client that breaks off its handshake, or runs out of time for it, must not take the process down (it is
  // counted, not logged).
  server.on('tlsClientError', (_error, socket) => socket.destroy());
  metrics.watch(server);
  server.on('clientError', (_error, socket) => socket.destroy());
  return server;
}

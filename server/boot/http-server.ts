import http from 'node:http';
import type { Duplex } from 'node:stream';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../db/client';
import { ThreadedPreparer, joinThreadCount } from '../join/prepare-worker-pool';
import { logLimited } from '../log';
import { createAgentEndpoints, hasFixedHeaders, type AgentEndpointServices } from '../entry/agent-endpoints';
import { DEFAULT_MAX_BODY_BYTES } from '../http/body';
import { COMPUTE_METHODS, isWellEncodedPath, malformedPath, methodNotAllowed } from '../http/refusals';
import { securityHeaders } from '../http/security-headers';
import { downloadsDir } from '../downloads/serve';
import { METRICS_PATH } from '../metrics/endpoint';
import { serveApiMetrics } from '../metrics/api-endpoint';
import { withRequestLog } from '../metrics/request-log';
import { CLIENT_ADDRESS_HEADER, clientAddressOf, trustedProxies } from '../http/client-address';
import { startSessionSweeper } from '../sessions/session-service';
import { startRateLimitSweeper } from '../db/rate-limit-sweep';
import { endSessionWatches } from '../sessions/session-watch';
import { createServices, installProcessServices, printJoinStatsOnSignal, type Services } from './services';
import { startWebhookWorker } from '../webhooks/runtime';
import { startStaleNodeWorker } from '../pools/stale-worker';
import { startCommandExpiryWorker } from '../commands/expiry';

const TRPC_PATH = /^\/api\/trpc(?:\/|$)/;

/**
 * A tRPC POST that declares a body over the cap (the route's TRPC_MAX_BODY_BYTES, REST's default) is
 * answered here, before Next reads a byte of it, and the connection closes so the rest is never read. A
 * body without a length (chunked) is counted by the route itself.
 */
function declaresTooLargeTrpcBody(req: http.IncomingMessage, pathname: string): boolean {
  return req.method === 'POST' && TRPC_PATH.test(pathname) && Number(req.headers['content-length'] ?? 0) > DEFAULT_MAX_BODY_BYTES;
}

function refuseTooLarge(res: http.ServerResponse) {
  const body = JSON.stringify({ code: 'INVALID_ARGUMENT', message: `The request body is larger than ${DEFAULT_MAX_BODY_BYTES} bytes` });
  res
    .writeHead(413, {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      connection: 'close',
      'content-length': Buffer.byteLength(body),
    })
    .end(body);
}

/**
 * How long a client may take. Agents send a join body of a few KB and the CLI at most a REST body of
 * 1 MiB: a minute for the whole request (headers and body) serves a slow link and drops a client that
 * trickles a body to hold a connection. Node answers 408 and closes the socket when a bound passes;
 * `checkIntervalMs` is how often it looks.
 */
export const HTTP_TIMEOUTS = { headersMs: 20_000, requestMs: 60_000, keepAliveMs: 65_000, checkIntervalMs: 1_000 };
export type HttpTimeouts = typeof HTTP_TIMEOUTS;

/** The request's path with dot segments resolved (`/api/compute/v1/./join` is the join), or null if unparsable. */
export function normalizedPath(rawUrl: string | undefined): string | null {
  const raw = (rawUrl ?? '/').split('?', 1)[0]!;
  try {
    // A fixed origin, and the raw path after it: `//host/x` stays a path instead of naming a host.
    return new URL(`http://localhost${raw.startsWith('/') ? '' : '/'}${raw}`).pathname;
  } catch {
    return null;
  }
}

function answerJson(res: http.ServerResponse, response: Response) {
  void response.arrayBuffer().then((body) => {
    const bytes = Buffer.from(body);
    res.writeHead(response.status, { ...Object.fromEntries(response.headers), 'content-length': bytes.length }).end(bytes);
  });
}

/** A raw HTTP/1.1 answer in the error model, written to a socket that has no response under way. */
function rawAnswer(status: string, body: object): string {
  const json = JSON.stringify(body);
  return `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncache-control: no-store\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(json)}\r\n\r\n${json}`;
}

/**
 * What Node raises on a connection before or beside a request: a timeout (the header or request bound
 * passed: 408) or bytes that are not HTTP (400). Clients cause these at will, so they are answered in the
 * error model and logged as one rate-limited line, never a stack per connection. Answering here (rather
 * than Node's default) also means a timed-out body never reaches 'end': a handler sees an aborted request,
 * not a short body.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex) {
  const pending = (socket as Duplex & { _httpMessage?: http.ServerResponse })._httpMessage;
  const canAnswer = socket.writable && !pending?.headersSent;
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    logLimited('client-timeout', 'dropped a client that did not send its request in time');
    if (canAnswer)
      socket.end(rawAnswer('408 Request Timeout', { code: 'INVALID_ARGUMENT', message: 'The request took too long to arrive' }));
    else socket.destroy();
  } else if (error.code === 'ECONNRESET' || !canAnswer) {
    socket.destroy();
  } else {
    logLimited('client-malformed', 'refused bytes that are not an HTTP request');
    socket.end(rawAnswer('400 Bad Request', { code: 'INVALID_ARGUMENT', message: 'Not a valid HTTP request' }));
  }
}

export type NodeHandler = (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>;

/** What the boot server answers with besides Next: the agent endpoints' services and the metrics registry. */
type BootServices = AgentEndpointServices & Pick<Services, 'metricsRegistry'>;

/**
 * The server in front of Next: security headers on every answer, refusals in the error model for what Next
 * would answer with a plain-text 500 (a malformed percent-escape, TRACE), the agent endpoints
 * (server/entry/agent-endpoints.ts: every path that resolves to one is served there, so every route to it
 * answers the same bytes and headers), and timeouts for slow clients. `next()` is Next's handler once it
 * has loaded (the tests' server processes mount the same route functions without a build); until then
 * requests get a 503.
 */
export function createBootServer(
  services: BootServices,
  next: () => NodeHandler | undefined,
  timeouts: HttpTimeouts = HTTP_TIMEOUTS,
): http.Server {
  const agent = createAgentEndpoints({ ...services, downloadsDir: services.downloadsDir ?? (() => downloadsDir(PROJECT_ROOT)) });
  const server = http.createServer(
    { headersTimeout: timeouts.headersMs, requestTimeout: timeouts.requestMs, connectionsCheckingInterval: timeouts.checkIntervalMs },
    withRequestLog(
      (req, res) => {
        const pathname = normalizedPath(req.url);
        for (const [name, value] of Object.entries(securityHeaders(pathname ?? '/api/'))) res.setHeader(name, value);
        if (pathname === null) return answerJson(res, malformedPath());
        if (pathname === METRICS_PATH) return void serveApiMetrics(req, res, services.metricsRegistry);
        if (pathname.startsWith('/api/')) {
          if (!isWellEncodedPath(pathname)) return answerJson(res, malformedPath());
          if (!(COMPUTE_METHODS as readonly string[]).includes(req.method ?? ''))
            return answerJson(res, methodNotAllowed(req.method ?? '', COMPUTE_METHODS));
          if (agent(req, res, pathname)) return;
          if (declaresTooLargeTrpcBody(req, pathname)) return refuseTooLarge(res);
        }
        // The address Next's handlers see (sign-in throttling): decided here from the socket, never taken from the client.
        req.headers[CLIENT_ADDRESS_HEADER] = clientAddressOf(req.socket.remoteAddress, req.headers['x-forwarded-for'], trustedProxies());
        const handle = next();
        if (!handle) {
          res
            .writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' })
            .end('{"code":"INVALID_STATE","message":"Starting"}');
          return;
        }
        void handle(req, res);
      },
      (req) => !hasFixedHeaders(normalizedPath(req.url)),
    ),
  );
  server.keepAliveTimeout = timeouts.keepAliveMs;
  server.on('clientError', answerClientError);
  return server;
}

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Listens on the port first, so a port in use is a clear error before anything slow starts. */
export async function listen(server: http.Server, port: number, hostname = '0.0.0.0'): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new Error(`Port ${port} is already in use; set PORT to another port`) : error);
    server.once('error', onError);
    server.listen(port, hostname, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/**
 * Serves the production build of the console and APIs on `port` (with `dev`, Next's development server
 * instead: `npm run dev`; with `console`, that handler instead of Next, for the tests' server processes,
 * which have no build). Wires the process's services (server/boot/services.ts) with the join preparation
 * threads, and every instance sweeps the sessions of dead gateways. Requests that arrive while Next is
 * still loading get a 503. Returns the listening server and a function that closes it.
 */
export async function startHttpServer(options: {
  port: number;
  databaseUrl: string;
  /** The client the start already opened, for the services to share. */
  db?: Db;
  hostname?: string;
  dev?: boolean;
  console?: (services: Services) => NodeHandler;
}): Promise<{ server: http.Server; services: Services; stop: () => Promise<void> }> {
  const threads = joinThreadCount();
  const preparer = threads > 0 ? new ThreadedPreparer(threads) : undefined;
  preparer?.start();
  const services = installProcessServices(createServices({ databaseUrl: options.databaseUrl, db: options.db, preparer }));
  printJoinStatsOnSignal(services);
  let handle: NodeHandler | undefined = options.console?.(services);
  // Every instance sweeps: node.disconnected must follow a dead gateway even when no gateway calls in.
  const stopSweeper = startSessionSweeper(services.sessions);
  // Every instance sweeps rate_limits rows whose window ended an hour ago (SKIP LOCKED: instances never wait).
  const stopRateLimitSweeper = startRateLimitSweeper(services.pg);
  // Every instance delivers webhooks: claims with SKIP LOCKED share the outbox among them. Not the tests'
  // server processes (`console`): test files share one database, and a worker there would claim the deliveries
  // of the tests that run their own tenant-scoped workers (server/webhooks/).
  const stopWebhooks = options.console ? async () => {} : await startWebhookWorker(services);
  // Every instance applies the pools' stale-node policies (SKIP LOCKED: each node once); not the tests' either.
  const stopStaleNodes = options.console ? async () => {} : startStaleNodeWorker(services.db);
  // Every instance ends commands that ran out of time (SKIP LOCKED: each command once); not the tests' either.
  const stopCommandExpiry = options.console ? async () => {} : startCommandExpiryWorker(services.pg);
  const server = createBootServer(services, () => handle);
  await listen(server, options.port, options.hostname);
  let app: { close(): Promise<void> } | undefined;
  if (!options.console) {
    const { default: next } = await import('next');
    const nextApp = next({ dev: options.dev ?? false, dir: path.resolve(PROJECT_ROOT), port: options.port, hostname: 'localhost' });
    await nextApp.prepare();
    handle = nextApp.getRequestHandler();
    app = nextApp;
  }
  return {
    server,
    services,
    stop: async () => {
      stopSweeper();
      stopRateLimitSweeper();
      await stopWebhooks();
      await stopStaleNodes();
      await stopCommandExpiry();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Watch streams never end by themselves: close() would wait for the gateways.
      endSessionWatches();
      await closed;
      // The development server keeps watchers and its bundler running until it is closed.
      if (options.dev) await app?.close();
      await preparer?.close();
    },
  };
}

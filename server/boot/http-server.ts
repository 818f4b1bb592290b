import http from 'node:http';
import type { Duplex } from 'node:stream';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../db/client';
import { BASE_PATH } from '../config/config';
import { JOIN_HEADERS } from '../join/http';
import { configureJoinPreparer, getJoinService } from '../join/join-runtime';
import { ThreadedPreparer, joinThreadCount } from '../join/prepare-worker-pool';
import { JOIN_FAILED, MAX_JOIN_BODY_BYTES } from '../../protocol/join-wire';
import { logError, logLimited } from '../log';
import { isClientAbort } from '../http/client-abort';
import { COMPUTE_METHODS, isWellEncodedPath, malformedPath, methodNotAllowed } from '../http/refusals';
import { securityHeaders } from '../http/security-headers';
import { DEFAULT_MAX_BODY_BYTES } from '../http/request-rules';
import { readBody } from '../http/read-body';
import { getRenewService } from '../renew/renew-runtime';
import { PEER_HEADER, VOUCH_HEADER } from '../renew/vouch';
import { MAX_RENEW_BODY_BYTES } from '../../protocol/renew-wire';
import { downloadsDir, isDownloadPath, serveDownload } from '../downloads/serve';
import { METRICS_PATH } from '../metrics/endpoint';
import { serveApiMetrics } from '../metrics/api-endpoint';
import { withRequestLog } from '../metrics/request-log';
import { CLIENT_ADDRESS_HEADER, clientAddressOf, trustedProxies } from '../http/client-address';
import { getSessionService, processSessionsListener } from '../sessions/session-runtime';
import { startSessionSweeper } from '../sessions/session-service';
import { startWebhookWorker } from '../webhooks/runtime';
import { MAX_HELLO_BODY_BYTES, SESSION_ACCEPTANCE_PATH, SESSION_LEASE_PATH, SESSION_PATH, SESSION_REFUSED, SESSION_WATCH_PATH } from '../../protocol/session-wire';
import { endSessionWatches, pipeWatchResponse, sessionWatchResponse } from '../sessions/session-watch';

const JOIN_PATH = `${BASE_PATH}/v1/join`;
const RENEW_PATH = `${BASE_PATH}/v1/renew`;
const HELLO_PATH = `${BASE_PATH}${SESSION_PATH}`;
const LEASE_PATH = `${BASE_PATH}${SESSION_LEASE_PATH}`;
const ACCEPTANCE_PATH = `${BASE_PATH}${SESSION_ACCEPTANCE_PATH}`;
const WATCH_PATH = `${BASE_PATH}${SESSION_WATCH_PATH}`;
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
  res.writeHead(413, { 'content-type': 'application/json', 'cache-control': 'no-store', connection: 'close', 'content-length': Buffer.byteLength(body) }).end(body);
}

/**
 * How long a client may take. Agents send a join body of a few KB and the CLI at most a REST body of
 * 1 MiB: a minute for the whole request (headers and body) serves a slow link and drops a client that
 * trickles a body to hold a connection. Node answers 408 and closes the socket when a bound passes;
 * `checkIntervalMs` is how often it looks.
 */
export const HTTP_TIMEOUTS = { headersMs: 20_000, requestMs: 60_000, keepAliveMs: 65_000, checkIntervalMs: 1_000 };
export type HttpTimeouts = typeof HTTP_TIMEOUTS;

/**
 * The agent's hot path, served before Next: a join costs well under a millisecond of our own work, and
 * Next's route handler machinery would add about as much again. Same function, same bytes as the route.
 */
async function handleJoin(req: http.IncomingMessage, res: http.ServerResponse) {
  try {
    const body = await readBody(req, MAX_JOIN_BODY_BYTES);
    const answer = await getJoinService().joinBody(body);
    res.writeHead(answer.status, { ...JOIN_HEADERS, 'content-length': answer.body.length }).end(answer.body);
  } catch (error) {
    if (isClientAbort(error)) {
      // The client went away, or Node timed it out (and answers 408 itself): nothing more to write.
      logLimited('join-client-abort', 'a join request ended before its body arrived (client closed or timed out)');
      return;
    }
    logError('join request failed', error);
    if (res.headersSent) res.destroy();
    else res.writeHead(JOIN_FAILED.status, { ...JOIN_HEADERS, 'content-length': JOIN_FAILED.body.length }).end(JOIN_FAILED.body);
  }
}

/** Renew, on the same fast path as the join: the gateway's vouching headers go to RenewService with the body. */
async function handleRenew(req: http.IncomingMessage, res: http.ServerResponse) {
  try {
    const body = await readBody(req, MAX_RENEW_BODY_BYTES);
    const header = (name: string) => (typeof req.headers[name] === 'string' ? (req.headers[name] as string) : undefined);
    const answer = await getRenewService().renew({ body, vouch: header(VOUCH_HEADER), peer: header(PEER_HEADER), path: RENEW_PATH });
    res.writeHead(answer.status, { ...JOIN_HEADERS, 'content-length': answer.body.length }).end(answer.body);
  } catch (error) {
    if (isClientAbort(error)) return;
    logError('renew request failed', error);
    if (res.headersSent) res.destroy();
    else res.writeHead(JOIN_FAILED.status, { ...JOIN_HEADERS, 'content-length': JOIN_FAILED.body.length }).end(JOIN_FAILED.body);
  }
}

/**
 * The gateway's session calls (a relayed Hello, its lease), on the same fast path: only the gateway's
 * vouching makes either count, so a direct caller gets the uniform refusal.
 */
async function handleSessionCall(req: http.IncomingMessage, res: http.ServerResponse, pathname: string) {
  try {
    // A lease call lists the sessions that closed since the last one: larger than a Hello.
    const body = await readBody(req, pathname === HELLO_PATH ? MAX_HELLO_BODY_BYTES * 2 : 8 * 1024 * 1024);
    const header = (name: string) => (typeof req.headers[name] === 'string' ? (req.headers[name] as string) : undefined);
    const call = { body, vouch: header(VOUCH_HEADER), peer: header(PEER_HEADER), path: pathname };
    const service = getSessionService();
    if (pathname === WATCH_PATH) {
      const gatewayId = await service.authorizeWatch(call);
      if (gatewayId) return pipeWatchResponse(sessionWatchResponse(processSessionsListener(), gatewayId), res);
      return void res.writeHead(SESSION_REFUSED.status, { ...JOIN_HEADERS, 'content-length': SESSION_REFUSED.body.length }).end(SESSION_REFUSED.body);
    }
    const answer = pathname === HELLO_PATH ? await service.hello(call) : pathname === ACCEPTANCE_PATH ? await service.acceptance(call) : await service.lease(call);
    res.writeHead(answer.status, { ...JOIN_HEADERS, 'content-length': answer.body.length }).end(answer.body);
  } catch (error) {
    if (isClientAbort(error)) return;
    logError('session request failed', error);
    if (res.headersSent) res.destroy();
    else res.writeHead(JOIN_FAILED.status, { ...JOIN_HEADERS, 'content-length': JOIN_FAILED.body.length }).end(JOIN_FAILED.body);
  }
}

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
    if (canAnswer) socket.end(rawAnswer('408 Request Timeout', { code: 'INVALID_ARGUMENT', message: 'The request took too long to arrive' }));
    else socket.destroy();
  } else if (error.code === 'ECONNRESET' || !canAnswer) {
    socket.destroy();
  } else {
    logLimited('client-malformed', 'refused bytes that are not an HTTP request');
    socket.end(rawAnswer('400 Bad Request', { code: 'INVALID_ARGUMENT', message: 'Not a valid HTTP request' }));
  }
}

/** The agent wire (protocol.md): every path that resolves to the join or the renewal. */
const isAgentPath = (pathname: string | null) => pathname === JOIN_PATH || pathname === RENEW_PATH;

export type NodeHandler = (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>;

/**
 * The server in front of Next: security headers on every answer, refusals in the error model for what Next
 * would answer with a plain-text 500 (a malformed percent-escape, TRACE), every path that resolves to the
 * join on the fast path (so every route to it answers the same bytes and headers), and timeouts for slow
 * clients. `next()` is Next's handler once it has loaded; until then requests get a 503.
 */
export function createBootServer(next: () => NodeHandler | undefined, timeouts: HttpTimeouts = HTTP_TIMEOUTS): http.Server {
  const server = http.createServer(
    { headersTimeout: timeouts.headersMs, requestTimeout: timeouts.requestMs, connectionsCheckingInterval: timeouts.checkIntervalMs },
    withRequestLog((req, res) => {
      const pathname = normalizedPath(req.url);
      for (const [name, value] of Object.entries(securityHeaders(pathname ?? '/api/'))) res.setHeader(name, value);
      if (pathname === null) return answerJson(res, malformedPath());
      if (pathname === METRICS_PATH) return void serveApiMetrics(req, res);
      if (pathname.startsWith('/api/')) {
        if (!isWellEncodedPath(pathname)) return answerJson(res, malformedPath());
        if (!(COMPUTE_METHODS as readonly string[]).includes(req.method ?? '')) return answerJson(res, methodNotAllowed(req.method ?? '', COMPUTE_METHODS));
        if (req.method === 'POST' && pathname === JOIN_PATH) return void handleJoin(req, res);
        if (req.method === 'POST' && pathname === RENEW_PATH) return void handleRenew(req, res);
        if (declaresTooLargeTrpcBody(req, pathname)) return refuseTooLarge(res);
        if (req.method === 'POST' && (pathname === HELLO_PATH || pathname === LEASE_PATH || pathname === ACCEPTANCE_PATH || pathname === WATCH_PATH)) return void handleSessionCall(req, res, pathname);
        // bcd downloads are files: served here, streamed, whether or not Next has loaded.
        if (req.method !== 'POST' && isDownloadPath(pathname)) return void serveDownload(req, res, pathname, downloadsDir(PROJECT_ROOT));
      }
      // The address Next's handlers see (sign-in throttling): decided here from the socket, never taken from the client.
      req.headers[CLIENT_ADDRESS_HEADER] = clientAddressOf(req.socket.remoteAddress, req.headers['x-forwarded-for'], trustedProxies());
      const handle = next();
      if (!handle) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' }).end('{"code":"INVALID_STATE","message":"Starting"}');
        return;
      }
      void handle(req, res);
    }, (req) => !isAgentPath(normalizedPath(req.url))),
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
 * instead: `npm run dev`). Requests that arrive while Next is still loading get a 503. Returns a function
 * that closes the server.
 */
export async function startHttpServer(options: { port: number; db: Db; hostname?: string; dev?: boolean }): Promise<() => Promise<void>> {
  const threads = joinThreadCount();
  const preparer = threads > 0 ? new ThreadedPreparer(threads) : null;
  if (preparer) {
    configureJoinPreparer(preparer);
    preparer.start();
  }
  let handle: NodeHandler | undefined;
  // Every instance sweeps: node.disconnected must follow a dead gateway even when no gateway calls in.
  const stopSweeper = startSessionSweeper(getSessionService());
  // Every instance delivers webhooks: claims with SKIP LOCKED share the outbox among them.
  const stopWebhooks = await startWebhookWorker();
  const server = createBootServer(() => handle);
  await listen(server, options.port, options.hostname);
  const { default: next } = await import('next');
  const app = next({ dev: options.dev ?? false, dir: path.resolve(PROJECT_ROOT), port: options.port, hostname: 'localhost' });
  await app.prepare();
  handle = app.getRequestHandler();
  return async () => {
    stopSweeper();
    await stopWebhooks();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    endSessionWatches();
    await closed;
    // The development server keeps watchers and its bundler running until it is closed.
    if (options.dev) await app.close();
    await preparer?.close();
  };
}

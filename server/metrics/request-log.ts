import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { logLevelEnabled } from '../log';

/** The header that carries a request's id: answered on every response, and passed on by the gateway. */
export const REQUEST_ID_HEADER = 'x-request-id';
const INCOMING_ID = /^[A-Za-z0-9._:-]{8,64}$/;

export const newRequestId = () => `req_${randomBytes(12).toString('base64url')}`;

/** A well-formed incoming `x-request-id` (the agent's, the gateway's) is kept; anything else gets a new id. */
export const requestIdOf = (incoming: string | string[] | undefined) =>
  typeof incoming === 'string' && INCOMING_ID.test(incoming) ? incoming : newRequestId();

/**
 * Request lines are written together once per turn of the event loop (as the gateway's are): a busy join
 * path ends hundreds of requests per turn, and one write for all of them costs one system call, not hundreds.
 */
let pendingLines = '';
function writeLine(line: string) {
  if (!pendingLines) {
    setImmediate(() => {
      const lines = pendingLines;
      pendingLines = '';
      process.stderr.write(lines);
    });
  }
  pendingLines += line + '\n';
}

interface RequestScope {
  principal: string | null;
}
const scope = new AsyncLocalStorage<RequestScope>();

/**
 * Names who the current request acts as (`api-key:ak_…`, `operator:op_…`) for its log line. An id, never a
 * credential; outside a logged request it does nothing.
 */
export function notePrincipal(actor: string | null | undefined): void {
  const current = scope.getStore();
  if (current && actor) current.principal = actor;
}

/**
 * Wraps a node:http handler so each request writes one JSON line to stderr when it ends: request id (also
 * the `x-request-id` response header; a well-formed incoming one, e.g. the gateway's, is kept), method,
 * route (the path, never the query string, which could carry anything), status, latency and principal.
 * Written at level `info` (BETTER_COMPUTE_LOG_LEVEL).
 */
export function withRequestLog(
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
  /** False for the agent endpoints: protocol.md fixes their answers' headers too, so the id stays in the log. */
  answersId: (req: http.IncomingMessage) => boolean = () => true,
): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) => {
    const started = performance.now();
    const requestId = requestIdOf(req.headers[REQUEST_ID_HEADER]);
    if (answersId(req)) res.setHeader(REQUEST_ID_HEADER, requestId);
    const state: RequestScope = { principal: null };
    res.once('close', () => {
      if (!logLevelEnabled('info')) return;
      const line = {
        level: 'info',
        time: new Date().toISOString(),
        message: 'request',
        requestId,
        method: req.method,
        route: (req.url ?? '/').split('?', 1)[0],
        status: res.statusCode,
        ms: Math.round((performance.now() - started) * 10) / 10,
        principal: state.principal,
        ...(res.writableFinished ? {} : { aborted: true }),
      };
      writeLine(JSON.stringify(line));
    });
    scope.run(state, () => handler(req, res));
  };
}

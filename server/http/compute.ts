import type { Db } from '../db/client';
import { BASE_PATH, PRODUCT_VERSION } from '../config/config';
import { createApiContext } from '../api/context';
import { errorResponse, handleRestRequest } from '../api/rest/handler';
import { buildOpenApiDocument } from '../api/rest/openapi';
import { buildWellKnownDocument } from './well-known';
import { JOIN_HEADERS, readLimitedBody } from '../join/http';
import { getJoinService } from '../join/join-runtime';
import { getRenewService } from '../renew/renew-runtime';
import { getSessionService, processSessionsListener } from '../sessions/session-runtime';
import { SESSION_ACCEPTANCE_PATH, SESSION_LEASE_PATH, SESSION_PATH, SESSION_REFUSED, SESSION_WATCH_PATH } from '../../protocol/session-wire';
import { sessionWatchResponse } from '../sessions/session-watch';
import { PEER_HEADER, VOUCH_HEADER } from '../renew/vouch';
import { JOIN_FAILED, type JoinAnswer } from '../../protocol/join-wire';
import { isClientAbort } from './client-abort';
import { logError, logLimited } from '../log';
import { COMPUTE_METHODS, isWellEncodedPath, malformedPath, methodNotAllowed } from './refusals';
import type { SessionClaim } from '../operators/operators';

export interface ComputeHandlerDeps {
  db: Db;
  /** The console session's claim (operator and session version), unchecked; the API context checks it. */
  sessionOperatorId: () => Promise<SessionClaim | null>;
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers } });

/** A public document, with its length (so HEAD, which answers GET's headers, names it too). */
function document(body: unknown, headers: Record<string, string>): Response {
  const bytes = Buffer.from(JSON.stringify(body));
  return new Response(new Uint8Array(bytes), { status: 200, headers: { 'content-type': 'application/json', 'content-length': String(bytes.length), ...headers } });
}

let openApiCache: unknown;

/**
 * Everything under the base path: the well-known document, the OpenAPI document, the agent endpoints and
 * the REST API. Route handlers (Next) and the boot server's fast path both call this one function.
 */
export async function handleComputeRequest(request: Request, deps: ComputeHandlerDeps): Promise<Response> {
  const url = new URL(request.url);
  if (!isWellEncodedPath(url.pathname)) return malformedPath();
  if (!(COMPUTE_METHODS as readonly string[]).includes(request.method)) return methodNotAllowed(request.method, COMPUTE_METHODS);
  if (!url.pathname.startsWith(BASE_PATH + '/')) return json(404, { code: 'NOT_FOUND', message: 'Not found' });
  const path = url.pathname.slice(BASE_PATH.length);
  if (request.method === 'HEAD') {
    // HEAD is GET without the body, for the REST reads too (a HEAD request carries no body to read).
    const answer = await handleComputeRequest(new Request(request.url, { method: 'GET', headers: request.headers }), deps);
    return new Response(null, { status: answer.status, headers: answer.headers });
  }

  if (path === '/.well-known/better-compute' && request.method === 'GET') {
    return document(await buildWellKnownDocument(deps.db), { 'cache-control': 'public, max-age=60' });
  }
  if (path === '/openapi.json' && request.method === 'GET') {
    openApiCache ??= buildOpenApiDocument(BASE_PATH, PRODUCT_VERSION);
    return document(openApiCache, { 'cache-control': 'public, max-age=60' });
  }
  if (path === '/v1/join' && request.method === 'POST') {
    let answer: JoinAnswer = JOIN_FAILED;
    try {
      answer = await getJoinService().joinBody(await readLimitedBody(request));
    } catch (error) {
      if (isClientAbort(error)) logLimited('join-client-abort', 'a join request ended before its body arrived (client closed or timed out)');
      else logError('join request failed', error);
    }
    // An explicit length keeps this answer byte for byte the boot server's fast path (no chunked encoding).
    return new Response(new Uint8Array(answer.body), { status: answer.status, headers: { ...JOIN_HEADERS, 'content-length': String(answer.body.length) } });
  }
  if (path === '/v1/renew' && request.method === 'POST') {
    // The boot server answers renewals before Next; this serves `next dev` with the same function.
    let answer: JoinAnswer = JOIN_FAILED;
    try {
      answer = await getRenewService().renew({
        body: await readLimitedBody(request),
        vouch: request.headers.get(VOUCH_HEADER) ?? undefined,
        peer: request.headers.get(PEER_HEADER) ?? undefined,
        path: url.pathname,
      });
    } catch (error) {
      if (!isClientAbort(error)) logError('renew request failed', error);
    }
    return new Response(new Uint8Array(answer.body), { status: answer.status, headers: { ...JOIN_HEADERS, 'content-length': String(answer.body.length) } });
  }
  if ((path === SESSION_PATH || path === SESSION_LEASE_PATH || path === SESSION_ACCEPTANCE_PATH || path === SESSION_WATCH_PATH) && request.method === 'POST') {
    // The gateway's session calls (a relayed Hello, its lease), as the boot server's fast path serves them.
    let answer: JoinAnswer = JOIN_FAILED;
    try {
      const call = {
        body: await readLimitedBody(request),
        vouch: request.headers.get(VOUCH_HEADER) ?? undefined,
        peer: request.headers.get(PEER_HEADER) ?? undefined,
        path: url.pathname,
      };
      const service = getSessionService();
      if (path === SESSION_WATCH_PATH) {
        const gatewayId = await service.authorizeWatch(call);
        if (gatewayId) return sessionWatchResponse(processSessionsListener(), gatewayId);
        answer = SESSION_REFUSED;
      } else answer = path === SESSION_PATH ? await service.hello(call) : path === SESSION_ACCEPTANCE_PATH ? await service.acceptance(call) : await service.lease(call);
    } catch (error) {
      if (!isClientAbort(error)) logError('session request failed', error);
    }
    return new Response(new Uint8Array(answer.body), { status: answer.status, headers: { ...JOIN_HEADERS, 'content-length': String(answer.body.length) } });
  }
  try {
    const ctx = await createApiContext(deps.db, request.headers, deps.sessionOperatorId);
    return await handleRestRequest(request, path, ctx);
  } catch (error) {
    return errorResponse(error);
  }
}

import type { Db } from '../db/client';
import { BASE_PATH, PRODUCT_VERSION } from '../config/config';
import { createApiContext } from '../api/context';
import { errorResponse, handleRestRequest } from '../api/rest/handler';
import { buildOpenApiDocument } from '../api/rest/openapi';
import { buildWellKnownDocument } from './well-known';
import { JOIN_HEADERS, readLimitedBody } from '../join/http';
import { getJoinService } from '../join/runtime';
import { JOIN_FAILED, type JoinAnswer } from '../join/wire';
import { logError } from '../log';

export interface ComputeHandlerDeps {
  db: Db;
  sessionOperatorId: () => Promise<string | null>;
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

let openApiCache: unknown;

/**
 * Everything under the base path: the well-known document, the OpenAPI document, the agent endpoints and
 * the REST API. Route handlers (Next) and the boot server's fast path both call this one function.
 */
export async function handleComputeRequest(request: Request, deps: ComputeHandlerDeps): Promise<Response> {
  const url = new URL(request.url);
  if (!url.pathname.startsWith(BASE_PATH + '/')) return json(404, { code: 'NOT_FOUND', message: 'Not found' });
  const path = url.pathname.slice(BASE_PATH.length);

  if (path === '/.well-known/better-compute' && request.method === 'GET') {
    return json(200, await buildWellKnownDocument(deps.db), { 'cache-control': 'public, max-age=60' });
  }
  if (path === '/openapi.json' && request.method === 'GET') {
    openApiCache ??= buildOpenApiDocument(BASE_PATH, PRODUCT_VERSION);
    return json(200, openApiCache);
  }
  if (path === '/v1/join' && request.method === 'POST') {
    let answer: JoinAnswer = JOIN_FAILED;
    try {
      answer = await getJoinService().joinBody(await readLimitedBody(request));
    } catch (error) {
      logError('join request failed', error);
    }
    return new Response(new Uint8Array(answer.body), { status: answer.status, headers: JOIN_HEADERS });
  }
  try {
    const ctx = await createApiContext(deps.db, request.headers, deps.sessionOperatorId);
    return await handleRestRequest(request, path, ctx);
  } catch (error) {
    return errorResponse(error);
  }
}

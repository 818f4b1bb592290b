import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { toErrorBody } from '../error-map';
import { DomainError } from '../../protocol/errors';
import { DEFAULT_MAX_BODY_BYTES, HttpRefusal, readRequestText, requireJsonContentType } from '../http/body';
import { checkSessionOrigin } from '../http/request-rules';
import { createApiContext, type ApiDeps } from './context';
import { appRouter } from './root';
import { TRPC_MAX_BATCH_SIZE } from '../../protocol/api/trpc-limits';

const refuse = (status: number, error: DomainError) => {
  const { body } = toErrorBody(error);
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store' } });
};

/** The largest tRPC request body, REST's default (a batch of 20 calls of console forms is a few KB). */
export const TRPC_MAX_BODY_BYTES = DEFAULT_MAX_BODY_BYTES;

/**
 * The request with its body read under the cap: tRPC's adapter would buffer a body of any size. A body that
 * declares or streams more than `limit` bytes stops being read at the limit and answers 413.
 */
async function withCappedBody(request: Request, limit: number): Promise<Request | Response> {
  let text: string;
  try {
    text = await readRequestText(request, limit);
  } catch (error) {
    if (error instanceof HttpRefusal) return refuse(error.status, error);
    throw error;
  }
  const headers = new Headers(request.headers);
  headers.delete('content-length');
  headers.delete('transfer-encoding');
  return new Request(request.url, { method: request.method, headers, body: text, signal: request.signal });
}

/**
 * `/api/trpc`: the console's API. A mutation (POST) must be JSON exactly (tRPC would also take
 * multipart/form-data and octet-stream bodies, which a cross-site form can send without a preflight), one
 * riding on the console's session cookie must come from the console's own origin, and its body is capped
 * like REST's (TRPC_MAX_BODY_BYTES, else 413).
 */
export async function handleTrpcRequest(request: Request, deps: ApiDeps): Promise<Response> {
  if (request.method === 'POST') {
    try {
      requireJsonContentType(request.headers.get('content-type'), 'Send tRPC mutations as application/json');
    } catch (error) {
      if (error instanceof HttpRefusal) return refuse(error.status, error);
      throw error;
    }
    if (!request.headers.has('authorization')) {
      const refusal = checkSessionOrigin(request.headers);
      if (refusal) return refuse(403, refusal);
    }
    const capped = await withCappedBody(request, TRPC_MAX_BODY_BYTES);
    if (capped instanceof Response) return capped;
    request = capped;
  }
  return fetchRequestHandler({
    endpoint: '/api/trpc',
    req: request,
    router: appRouter,
    maxBatchSize: TRPC_MAX_BATCH_SIZE,
    createContext: () => createApiContext(deps.db, request.headers, deps.sessionOperatorId, deps.services),
  });
}

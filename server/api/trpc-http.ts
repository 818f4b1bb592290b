import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import type { Db } from '../db/client';
import { toErrorBody } from '../error-map';
import { DomainError } from '../errors';
import { checkSessionOrigin, isJsonContentType } from '../http/request-rules';
import type { SessionClaim } from '../operators/operators';
import { createApiContext } from './context';
import { appRouter } from './root';
import { TRPC_MAX_BATCH_SIZE } from './trpc-limits';

const refuse = (status: number, error: DomainError) => {
  const { body } = toErrorBody(error);
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store' } });
};

/**
 * `/api/trpc`: the console's API. A mutation (POST) must be JSON exactly (tRPC would also take
 * multipart/form-data and octet-stream bodies, which a cross-site form can send without a preflight), and
 * one riding on the console's session cookie must come from the console's own origin.
 */
export async function handleTrpcRequest(request: Request, deps: { db: Db; sessionOperatorId: () => Promise<SessionClaim | null> }): Promise<Response> {
  if (request.method === 'POST') {
    if (!isJsonContentType(request.headers.get('content-type'))) {
      return refuse(415, new DomainError('INVALID_ARGUMENT', 'Send tRPC mutations as application/json'));
    }
    if (!request.headers.has('authorization')) {
      const refusal = checkSessionOrigin(request.headers);
      if (refusal) return refuse(403, refusal);
    }
  }
  return fetchRequestHandler({
    endpoint: '/api/trpc',
    req: request,
    router: appRouter,
    maxBatchSize: TRPC_MAX_BATCH_SIZE,
    createContext: () => createApiContext(deps.db, request.headers, deps.sessionOperatorId),
  });
}

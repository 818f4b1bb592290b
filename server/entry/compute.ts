import { BASE_PATH, PRODUCT_VERSION } from '../config/config';
import { createApiContext, type ApiDeps } from '../api/context';
import { errorResponse, handleRestRequest } from '../api/rest/handler';
import { buildOpenApiDocument } from '../api/rest/openapi';
import { COMPUTE_METHODS, isWellEncodedPath, malformedPath, methodNotAllowed } from '../http/refusals';
import { AUDIT_EXPORT_PATH, handleAuditExport } from './audit-export';
import { handleNodesExport, NODES_EXPORT_PATH } from './nodes-export';
import { ExportRateLimited } from '../http/csv-export';

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers } });

/** A public document, with its length (so HEAD, which answers GET's headers, names it too). */
function document(body: unknown, headers: Record<string, string>): Response {
  const bytes = Buffer.from(JSON.stringify(body));
  return new Response(new Uint8Array(bytes), {
    status: 200,
    headers: { 'content-type': 'application/json', 'content-length': String(bytes.length), ...headers },
  });
}

let openApiCache: unknown;

const CSV_EXPORTS = [
  [AUDIT_EXPORT_PATH, handleAuditExport],
  [NODES_EXPORT_PATH, handleNodesExport],
] as const;

/**
 * The REST API and the OpenAPI document under the base path: what the compute route handler (Next) serves.
 * The agent endpoints and the well-known document are the boot server's, before Next
 * (server/entry/agent-endpoints.ts).
 */
export async function handleComputeRequest(request: Request, deps: ApiDeps): Promise<Response> {
  const url = new URL(request.url);
  if (!isWellEncodedPath(url.pathname)) return malformedPath();
  if (!(COMPUTE_METHODS as readonly string[]).includes(request.method)) return methodNotAllowed(request.method, COMPUTE_METHODS);
  if (!url.pathname.startsWith(BASE_PATH + '/')) return json(404, { code: 'NOT_FOUND', message: 'Not found' });
  const path = url.pathname.slice(BASE_PATH.length);
  // The CSV exports stream rather than answering one procedure's JSON (server/http/csv-export.ts).
  for (const [pattern, handle] of CSV_EXPORTS) {
    const match = pattern.exec(path);
    if (!match) continue;
    try {
      const ctx = await createApiContext(deps.db, request.headers, deps.sessionOperatorId, deps.services);
      return await handle(request, decodeURIComponent(match[1]!), ctx);
    } catch (error) {
      const answer = errorResponse(error);
      if (error instanceof ExportRateLimited) answer.headers.set('retry-after', String(error.retryAfterSeconds));
      return answer;
    }
  }
  if (request.method === 'HEAD') {
    // HEAD is GET without the body, for the REST reads too (a HEAD request carries no body to read).
    const answer = await handleComputeRequest(new Request(request.url, { method: 'GET', headers: request.headers }), deps);
    return new Response(null, { status: answer.status, headers: answer.headers });
  }

  if (path === '/openapi.json' && request.method === 'GET') {
    openApiCache ??= buildOpenApiDocument(BASE_PATH, PRODUCT_VERSION);
    return document(openApiCache, { 'cache-control': 'public, max-age=60' });
  }
  try {
    const ctx = await createApiContext(deps.db, request.headers, deps.sessionOperatorId, deps.services);
    return await handleRestRequest(request, path, ctx);
  } catch (error) {
    return errorResponse(error);
  }
}

import type http from 'node:http';
import type { Db } from '../server/db/client';
import { handleComputeRequest } from '../server/http/compute';
import { logError } from '../server/log';

/**
 * Serves one Node request through handleComputeRequest, the function the app's compute route calls: the
 * REST API, the well-known and OpenAPI documents and the agent endpoints, with no console session.
 */
export async function serveCompute(db: Db, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  try {
    await answer(db, req, res);
  } catch (error) {
    // What Next does with a route handler that throws: a bare 500, and the error in the log.
    logError('test server: the compute handler threw', error);
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' }).end('Internal Server Error');
    else res.destroy();
  }
}

async function answer(db: Db, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
  const request = new Request(`http://${req.headers.host ?? 'localhost'}${req.url}`, {
    method: req.method,
    headers,
    body: req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks),
  });
  const response = await handleComputeRequest(request, { db, sessionOperatorId: async () => null });
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
}

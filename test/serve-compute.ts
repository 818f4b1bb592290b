import type http from 'node:http';
import type { Db } from '../server/db/client';
import type { ApiServices } from '../server/api/trpc';
import { handleComputeRequest } from '../server/entry/compute';
import { logError } from '../server/log';
import { decode } from 'next-auth/jwt';
import { handleTrpcRequest } from '../server/api/trpc-http';
import { sessionVersionOf } from '../server/auth/session-claim';
import type { SessionClaim } from '../server/operators/operators';

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

/** A Node request read whole into the Fetch Request a route handler receives (as Next hands it). */
async function fetchRequestOf(req: http.IncomingMessage, signal?: AbortSignal): Promise<Request> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
  return new Request(`http://${req.headers.host ?? 'localhost'}${req.url}`, {
    method: req.method,
    headers,
    body: req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks),
    signal,
  });
}

async function answer(db: Db, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const request = await fetchRequestOf(req);
  const response = await handleComputeRequest(request, { db, sessionOperatorId: async () => null });
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) return void res.end();
  // Streamed as Next streams a route's answer: the gateway's session watch stays open.
  const reader = response.body.getReader();
  res.on('close', () => void reader.cancel().catch(() => {}));
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) res.write(chunk.value);
  res.end();
}

/**
 * Serves `/api/trpc` through handleTrpcRequest, the function the app's tRPC route calls, streaming the
 * answer (subscriptions are server-sent events). A console session is the next-auth JWT cookie, decoded
 * under NEXTAUTH_SECRET as getServerSession would; an API key is the Authorization header as in the app.
 */
export async function serveTrpc(db: Db, req: http.IncomingMessage, res: http.ServerResponse, services?: ApiServices): Promise<void> {
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  try {
    const request = await fetchRequestOf(req, abort.signal);
    const response = await handleTrpcRequest(request, {
      db,
      services,
      sessionOperatorId: () => sessionClaimFromCookie(req.headers.cookie),
    });
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (!response.body) return void res.end();
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) res.write(chunk);
    res.end();
  } catch (error) {
    if (abort.signal.aborted) return;
    logError('test server: the tRPC handler threw', error);
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' }).end('Internal Server Error');
    else res.destroy();
  }
}

async function sessionClaimFromCookie(cookie: string | undefined): Promise<SessionClaim | null> {
  const value = cookie
    ?.split(/;\s*/)
    .find((c) => c.startsWith('next-auth.session-token='))
    ?.slice('next-auth.session-token='.length);
  if (!value || !process.env.NEXTAUTH_SECRET) return null;
  const token = await decode({ token: decodeURIComponent(value), secret: process.env.NEXTAUTH_SECRET }).catch(() => null);
  const version = sessionVersionOf(token);
  return token?.sub && version !== null ? { operatorId: token.sub, sessionVersion: version } : null;
}

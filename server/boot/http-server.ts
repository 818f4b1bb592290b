import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../db/client';
import { BASE_PATH } from '../config/config';
import { JOIN_HEADERS } from '../join/http';
import { configureJoinPreparer, getJoinService } from '../join/runtime';
import { ThreadedPreparer, joinThreadCount } from '../join/prepare-threads';
import { JOIN_FAILED, MAX_JOIN_BODY_BYTES } from '../join/wire';
import { logError } from '../log';

const JOIN_PATH = `${BASE_PATH}/v1/join`;

/** Reads a request body up to `limit` bytes; null when it is larger (the rest is drained). */
function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > limit ? null : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * The agent's hot path, served before Next: a join costs well under a millisecond of our own work, and
 * Next's route handler machinery would add about as much again. Same function, same bytes as the route.
 */
async function handleJoin(req: http.IncomingMessage, res: http.ServerResponse) {
  try {
    const answer = await getJoinService().joinBody(await readBody(req, MAX_JOIN_BODY_BYTES));
    res.writeHead(answer.status, { ...JOIN_HEADERS, 'content-length': answer.body.length }).end(answer.body);
  } catch (error) {
    logError('join request failed', error);
    if (!res.headersSent) res.writeHead(JOIN_FAILED.status, { ...JOIN_HEADERS, 'content-length': JOIN_FAILED.body.length }).end(JOIN_FAILED.body);
    else res.destroy();
  }
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
 * Serves the production build of the console and APIs on `port`. Requests that arrive while Next is
 * still loading get a 503. Returns a function that closes the server.
 */
export async function startHttpServer(options: { port: number; db: Db; hostname?: string }): Promise<() => Promise<void>> {
  const threads = joinThreadCount();
  const preparer = threads > 0 ? new ThreadedPreparer(threads) : null;
  if (preparer) {
    configureJoinPreparer(preparer);
    preparer.start();
  }
  let handle: ((req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>) | undefined;
  const server = http.createServer((req, res) => {
    if (req.method === 'POST' && (req.url === JOIN_PATH || req.url?.startsWith(`${JOIN_PATH}?`))) {
      void handleJoin(req, res);
      return;
    }
    if (!handle) {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' }).end('{"code":"INVALID_STATE","message":"Starting"}');
      return;
    }
    void handle(req, res);
  });
  server.keepAliveTimeout = 65_000;
  await listen(server, options.port, options.hostname);
  const { default: next } = await import('next');
  const app = next({ dev: false, dir: path.resolve(PROJECT_ROOT), port: options.port, hostname: 'localhost' });
  await app.prepare();
  handle = app.getRequestHandler();
  return async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await preparer?.close();
  };
}

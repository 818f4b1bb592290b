import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../db/client';

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
  let handle: ((req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>) | undefined;
  const server = http.createServer((req, res) => {
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
  return () => new Promise((resolve) => server.close(() => resolve()));
}

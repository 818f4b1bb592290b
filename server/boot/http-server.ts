import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import next from 'next';
import type { Db } from '../db/client';

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Serves the production build of the console and APIs on `port`. A port in use is a clear error, not a
 * stack trace. Returns a function that closes the server.
 */
export async function startHttpServer(options: { port: number; db: Db; hostname?: string }): Promise<() => Promise<void>> {
  const app = next({ dev: false, dir: path.resolve(PROJECT_ROOT), port: options.port, hostname: options.hostname ?? 'localhost' });
  await app.prepare();
  const handle = app.getRequestHandler();
  const server = http.createServer((req, res) => {
    void handle(req, res);
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new Error(`Port ${options.port} is already in use; set PORT to another port`) : error),
    );
    server.listen(options.port, options.hostname ?? '0.0.0.0', () => resolve());
  });
  return () => new Promise((resolve) => server.close(() => resolve()));
}

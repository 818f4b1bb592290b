/**
 * A server process for the reliability tests (test/reliability): `server/boot/main.ts` on an external
 * DATABASE_URL (or, when it is empty, main.ts's embedded PostgreSQL under BETTER_COMPUTE_DATA_DIR), minus the
 * console. Started with `node --import tsx test/compute-server.ts`.
 *
 * Why not main.ts itself: it serves the join on its fast path before Next loads, but then calls Next's
 * `app.prepare()`, which needs a `next build` (minutes on the CI's 2 cores, and `npm test` builds only
 * for Playwright, after vitest). Everything a join or a REST call touches is the production code, started
 * in main.ts's order: checkStartupConfig, migrate, bootstrapFirstStart, loadPki (a secret that cannot open
 * the PKI stops the start), the join preparation threads (BETTER_COMPUTE_JOIN_THREADS), then one HTTP
 * server whose join path reads the body like the boot server's fast path and answers through the process's
 * JoinService (`getJoinService().joinBody`), and whose other paths go through handleComputeRequest, the
 * function the compute route calls.
 *
 * Prints `listening on http://127.0.0.1:<port>` once it serves. PORT=0 takes any free port.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { bootstrapFirstStart } from '../server/boot/bootstrap';
import { listen } from '../server/boot/http-server';
import { checkStartupConfig } from '../server/boot/startup-config';
import { BASE_PATH } from '../server/config/config';
import { createDb } from '../server/db/client';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../server/db/embedded';
import { dataDirectory } from '../server/boot/data-dir';
import { migrate } from '../server/db/migrate';
import { JOIN_HEADERS } from '../server/join/http';
import { ThreadedPreparer, joinThreadCount } from '../server/join/prepare-worker-pool';
import { configureJoinPreparer, getJoinService } from '../server/join/join-runtime';
import { JOIN_FAILED, MAX_JOIN_BODY_BYTES } from '../protocol/join-wire';
import { logError } from '../server/log';
import { loadPki } from '../server/pki/store';
import { serveCompute, serveTrpc } from './serve-compute';
import { serveAuth } from './serve-auth';
import { createAuthOptions } from '../server/auth/auth-options';
import { downloadsDir, isDownloadPath, serveDownload } from '../server/downloads/serve';
import { serveApiMetrics } from '../server/metrics/api-endpoint';
import { getSessionService } from '../server/sessions/session-runtime';
import { startSessionSweeper } from '../server/sessions/session-service';

const JOIN_PATH = `${BASE_PATH}/v1/join`;

/** The fast path's body reader (server/boot/http-server.ts): null when larger than the limit. */
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

let embedded: EmbeddedDatabase | undefined;

async function main() {
  const secret = process.env.BETTER_COMPUTE_SECRET;
  if (!secret) throw new Error('BETTER_COMPUTE_SECRET must be set');
  // As main.ts: without DATABASE_URL, the embedded PostgreSQL under BETTER_COMPUTE_DATA_DIR.
  if (!process.env.DATABASE_URL) {
    const toLog = (line: string) => process.stderr.write(`${line}\n`);
    embedded = await startEmbeddedDatabase(dataDirectory(), { notice: toLog, log: toLog });
  }
  const url = process.env.DATABASE_URL || embedded!.url;
  // As main.ts: the runtimes that open their own pools (sessions, listeners) read it from the environment.
  process.env.DATABASE_URL = url;
  checkStartupConfig();
  await migrate(url);
  const db = createDb(url);
  await bootstrapFirstStart(db, { secret, trustDomain: process.env.BETTER_COMPUTE_TRUST_DOMAIN || 'reliability.example.com' });
  await loadPki(db, secret);

  const threads = joinThreadCount();
  if (threads > 0) {
    const preparer = new ThreadedPreparer(threads);
    configureJoinPreparer(preparer);
    preparer.start();
  }
  // As startHttpServer: every instance sweeps the sessions of dead gateways.
  startSessionSweeper(getSessionService());
  // No webhook delivery worker, unlike startHttpServer: test files share the test database, and one here would
  // claim the deliveries of the tests that run their own (tenant-scoped) workers (server/webhooks/).
  const authOptions = createAuthOptions();
  const server = http.createServer((req, res) => {
    // The boot server's GET /metrics (server/boot/http-server.ts).
    if ((req.url ?? '').split('?', 1)[0] === '/metrics') void serveApiMetrics(req, res);
    else if (req.method === 'POST' && (req.url === JOIN_PATH || req.url?.startsWith(`${JOIN_PATH}?`))) void handleJoin(req, res);
    // The boot server's download route (server/boot/http-server.ts), for the install-script tests.
    else if (req.method !== 'POST' && isDownloadPath(req.url ?? '')) void serveDownload(req, res, req.url!, downloadsDir(process.cwd()));
    // The console's tRPC route (handleTrpcRequest), for the live-stream tests.
    else if (req.url?.startsWith('/api/trpc/')) void serveTrpc(db, req, res);
    // The console's sign-in (next-auth with the console's options), for the single sign-on tests.
    else if (req.url?.startsWith('/api/auth/')) void serveAuth(authOptions, req, res);
    else void serveCompute(db, req, res);
  });
  server.keepAliveTimeout = 65_000;
  await listen(server, Number(process.env.PORT ?? 0), '127.0.0.1');
  process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
  process.on('SIGTERM', () => void (embedded?.stop() ?? Promise.resolve()).finally(() => process.exit(0)));
}

main().catch((error: unknown) => {
  process.stderr.write(`Could not start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

/**
 * A server process for the tests that need a real one (test/server-process.ts): the production start
 * (server/boot/start.ts, as `npm start` runs it: embedded PostgreSQL unless DATABASE_URL is set, migrations,
 * first start, the PKI opened or refused, the join threads, the session sweeper) and the production boot
 * server (security headers, timeouts, refusals, the agent endpoints, /metrics). Only Next is replaced, since
 * it needs a `next build` (minutes on the CI's 2 cores): the console's routes are served by the functions
 * the app's route handlers call (REST, tRPC, next-auth), mounted on Node by test/serve-compute.ts.
 *
 * Prints `listening on http://127.0.0.1:<port>` once it serves. PORT=0 takes any free port.
 */
import { createAuthOptions } from '../server/auth/auth-options';
import { runServerProcess } from '../server/boot/start';
import { serveAuth } from './serve-auth';
import { serveCompute, serveTrpc } from './serve-compute';

runServerProcess({
  allowAnyPort: true,
  defaultTrustDomain: 'reliability.example.com',
  // The embedded PostgreSQL's log and notices on stderr, which the harness keeps (ServerProcess.log).
  embeddedLog: (line) => process.stderr.write(`${line}\n`),
  console: (services) => {
    const authOptions = createAuthOptions(() => services.db);
    return async (req, res) => {
      // The console's tRPC route (handleTrpcRequest), for the live-stream tests.
      if (req.url?.startsWith('/api/trpc/')) return serveTrpc(services.db, req, res, services);
      // The console's sign-in (next-auth with the console's options), for the single sign-on tests.
      if (req.url?.startsWith('/api/auth/')) return serveAuth(authOptions, req, res);
      // The compute route (handleComputeRequest): the REST API and the OpenAPI document.
      return serveCompute(services.db, req, res);
    };
  },
  onListening: (port) => process.stdout.write(`listening on http://127.0.0.1:${port}\n`),
});

/**
 * The API's agent endpoints for `bench:renew`: the boot server's fast paths (join and renew) with the join
 * worker threads, exactly as `npm start` serves them, without Next (the benchmark needs no console, and no
 * production build). DATABASE_URL, BETTER_COMPUTE_SECRET and PORT as for the server. A line `stats` on
 * stdin answers one JSON line on stdout: how RenewService grouped its reads and writes so far.
 */
import { createBootServer, listen } from '../server/boot/http-server';
import { configureJoinPreparer } from '../server/join/join-runtime';
import { ThreadedPreparer, joinThreadCount } from '../server/join/prepare-worker-pool';
import { getRenewService } from '../server/renew/renew-runtime';
import { loadPkiRuntime } from '../server/join/join-runtime';

const threads = joinThreadCount();
if (threads > 0) {
  const preparer = new ThreadedPreparer(threads);
  configureJoinPreparer(preparer);
  preparer.start();
}
// The PKI is unsealed (scrypt, by design slow) before the API says it is running, as a server that has
// answered once has it: otherwise the first joins of the timed phase wait for it.
await loadPkiRuntime();
const server = createBootServer(() => undefined);
// Connections accepted: the gateway's keep-alive pool should open a few and reuse them.
let connections = 0;
server.on('connection', () => connections++);
await listen(server, Number(process.env.PORT), '127.0.0.1');
process.stdout.write('api is running\n');
process.stdin.on('data', (chunk: Buffer) => {
  if (chunk.toString().includes('stats')) process.stdout.write(`stats ${JSON.stringify({ ...getRenewService().stats(), connections })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));

/**
 * The API for `bench:sessions`: the boot server's fast paths (join, renew, the gateway's session calls) with
 * the join worker threads and the session sweep, exactly as `npm start` serves them, and the REST API through
 * handleComputeRequest (the function the compute route calls) in place of Next, so the benchmark can time a
 * console list without a production build. DATABASE_URL, BETTER_COMPUTE_SECRET and PORT as for the server.
 */
import { createBootServer, listen } from '../server/boot/http-server';
import { createDb } from '../server/db/client';
import { configureJoinPreparer, loadPkiRuntime } from '../server/join/join-runtime';
import { ThreadedPreparer, joinThreadCount } from '../server/join/prepare-worker-pool';
import { getSessionService } from '../server/sessions/session-runtime';
import { startSessionSweeper } from '../server/sessions/session-service';
import { endSessionWatches } from '../server/sessions/session-watch';
import { serveCompute } from '../test/serve-compute';

const threads = joinThreadCount();
if (threads > 0) {
  const preparer = new ThreadedPreparer(threads);
  configureJoinPreparer(preparer);
  preparer.start();
}
await loadPkiRuntime();
const db = createDb(process.env.DATABASE_URL!, { max: 4 });
startSessionSweeper(getSessionService());
const server = createBootServer(() => (req, res) => serveCompute(db, req, res));
await listen(server, Number(process.env.PORT), '127.0.0.1');
process.stdout.write('api is running\n');
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  endSessionWatches();
});

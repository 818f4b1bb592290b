/**
 * The API for `bench:sessions`: the boot server (agent endpoints: join, renew, the gateway's session calls)
 * with the join worker threads and the session sweep, exactly as `npm start` serves them, and the REST API
 * through handleComputeRequest (the function the compute route calls) in place of Next, so the benchmark can
 * time a console list without a production build. DATABASE_URL, BETTER_COMPUTE_SECRET and PORT as for the server.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startHttpServer } from '../server/boot/http-server';
import { serveCompute } from '../test/serve-compute';

const { services, stop } = await startHttpServer({
  port: Number(process.env.PORT),
  hostname: '127.0.0.1',
  databaseUrl: process.env.DATABASE_URL!,
  console: (s) => (req, res) => serveCompute(s.db, req, res),
});
await services.pki.load();
process.stdout.write('api is running\n');
// The event loop's delay every 5 s (stderr, one line each): whether a slow console list waited for this
// process's event loop or for the database.
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
setInterval(() => {
  const ms = (ns: number) => Math.round(ns / 1e6);
  process.stderr.write(
    `[api event loop] p50 ${ms(delay.percentile(50))} ms, p99 ${ms(delay.percentile(99))} ms, max ${ms(delay.max)} ms\n`,
  );
  delay.reset();
}, 5_000).unref();
process.on('SIGTERM', () => void stop().finally(() => process.exit(0)));

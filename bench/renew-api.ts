/**
 * The API's agent endpoints for `bench:renew`: the boot server (server/boot/http-server.ts) with the join
 * worker threads, exactly as `npm start` serves them, without Next (the benchmark needs no console, and no
 * production build). DATABASE_URL, BETTER_COMPUTE_SECRET and PORT as for the server. A line `stats` on
 * stdin answers one JSON line on stdout: how RenewService grouped its reads and writes so far.
 */
import { startHttpServer } from '../server/boot/http-server';

const { server, services, stop } = await startHttpServer({
  port: Number(process.env.PORT),
  hostname: '127.0.0.1',
  databaseUrl: process.env.DATABASE_URL!,
  console: () => async (_req, res) => void res.writeHead(404).end(),
});
// The PKI is unsealed (scrypt, by design slow) before the API says it is running, as a server that has
// answered once has it: otherwise the first joins of the timed phase wait for it.
await services.pki.load();
// Connections accepted: the gateway's keep-alive pool should open a few and reuse them.
let connections = 0;
server.on('connection', () => connections++);
process.stdout.write('api is running\n');
process.stdin.on('data', (chunk: Buffer) => {
  if (chunk.toString().includes('stats')) process.stdout.write(`stats ${JSON.stringify({ ...services.renew.stats(), connections })}\n`);
});
process.on('SIGTERM', () => void stop().finally(() => process.exit(0)));

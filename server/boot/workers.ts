import cluster from 'node:cluster';
import http from 'node:http';
import { listen, startHttpServer, type NodeHandler } from './http-server';
import type { Services } from './services';
import { markStopping } from '../log';

/**
 * How many server processes share the port: BETTER_COMPUTE_WORKERS (default 1). Each runs the console, the
 * APIs and its own JoinService; PostgreSQL is the only shared state, so they need no coordination. One
 * process skips the cluster entirely. On a 2-vCPU machine that also hosts PostgreSQL, one process joined as
 * fast as two (npm run bench:join) with half the memory, so more is opt-in for bigger machines.
 */
export function workerCount(env: Record<string, string | undefined> = process.env): number {
  const configured = env.BETTER_COMPUTE_WORKERS;
  if (configured) {
    const n = Number(configured);
    if (!Number.isInteger(n) || n < 1 || n > 64) throw new Error(`BETTER_COMPUTE_WORKERS must be 1 to 64, not ${configured}`);
    return n;
  }
  return 1;
}

/** Fails fast, in the primary, when the port is taken. */
export async function checkPortFree(port: number) {
  const probe = http.createServer();
  await listen(probe, port);
  await new Promise((resolve) => probe.close(resolve));
}

/**
 * Starts `count` server workers on `port` and resolves once every one listens. Returns a stop function.
 * A worker that dies unexpectedly is replaced, so one crash does not take the API down.
 */
export async function startWorkers(port: number, count: number, log: (line: string) => void): Promise<() => Promise<void>> {
  await checkPortFree(port);
  let stopping = false;
  const fork = () =>
    new Promise<void>((resolve, reject) => {
      const worker = cluster.fork({ BETTER_COMPUTE_ROLE: 'worker', PORT: String(port) });
      worker.once('message', (message: { ready?: boolean; error?: string }) =>
        message.ready ? resolve() : reject(new Error(message.error)),
      );
      worker.once('exit', (code) => {
        if (stopping) return;
        reject(new Error(`a server worker exited during start (${code})`));
        log(`A server worker exited (${code}); starting another.`);
        void fork().catch((error: Error) => log(`Could not replace the worker: ${error.message}`));
      });
    });
  await Promise.all(Array.from({ length: count }, fork));
  return async () => {
    stopping = true;
    await Promise.all(
      Object.values(cluster.workers ?? {}).map(
        (worker) =>
          new Promise<void>((resolve) => {
            if (!worker || worker.isDead()) return resolve();
            worker.once('exit', () => resolve());
            worker.kill('SIGTERM');
          }),
      ),
    );
  };
}

/** The worker side: serve on the shared port, then tell the primary. */
/**
 * Tells every server worker the process is stopping, before anything else happens: the embedded PostgreSQL
 * stops on the same signal (its exit hook), so the workers' connections may drop before their own SIGTERM.
 */
export function tellWorkersStopping() {
  for (const worker of Object.values(cluster.workers ?? {})) {
    if (worker && !worker.isDead()) worker.send({ stopping: true }, () => {});
  }
}

export async function runWorker(console?: (services: Services) => NodeHandler) {
  try {
    const { stop } = await startHttpServer({ port: Number(process.env.PORT), databaseUrl: process.env.DATABASE_URL!, console });
    process.on('SIGTERM', () => {
      markStopping();
      void stop().finally(() => process.exit(0));
    });
    // The primary decides when to stop; a Ctrl-C reaches PostgreSQL too, so its connections may go first.
    process.on('SIGINT', () => markStopping());
    process.on('message', (message: unknown) => {
      if (typeof message === 'object' && message !== null && (message as { stopping?: unknown }).stopping === true) markStopping();
    });
    process.send?.({ ready: true });
  } catch (error) {
    process.send?.({ error: error instanceof Error ? error.message : String(error) });
    process.exit(1);
  }
}

import { percentile } from '../agent/sim/percentiles';

/** A progress line on stderr, with the time of day. */
export const log = (line: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

const STALL_MS = 120_000;

/**
 * Runs `total` tasks on `concurrency` workers (each task given its index and its worker's); returns latencies (ms)
 * and the rate. The first five failures are logged with `logLine`.
 */
export async function drive(
  total: number,
  concurrency: number,
  task: (index: number, worker: number) => Promise<void>,
  logLine: (line: string) => void = log,
) {
  const latencies: number[] = [];
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      while (next < total) {
        const index = next++;
        const t0 = performance.now();
        try {
          await task(index, worker);
          latencies.push(performance.now() - t0);
        } catch (error) {
          if (failed++ < 5) logLine(`  failed: ${(error as Error).message}`);
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return {
    ok: latencies.length,
    failed,
    perSecond: Math.round(latencies.length / seconds),
    p50: Math.round(percentile(latencies, 50) * 10) / 10,
    p99: Math.round(percentile(latencies, 99) * 10) / 10,
  };
}

/** Waits until `count()` reaches `target`, logging progress; fails after two minutes without progress. */
export async function waitFor(what: string, target: number, count: () => Promise<number>): Promise<number> {
  const started = performance.now();
  let last = -1;
  let lastProgress = performance.now();
  for (;;) {
    const n = await count();
    if (n !== last) {
      if (Math.floor(n / Math.max(1, target / 10)) !== Math.floor(last / Math.max(1, target / 10))) log(`  ${what}: ${n}/${target}`);
      last = n;
      lastProgress = performance.now();
    }
    if (n >= target) return (performance.now() - started) / 1000;
    if (performance.now() - lastProgress > STALL_MS) throw new Error(`${what}: no progress for two minutes at ${n}/${target}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Merges the pending list of every GIN index of the schema into its index now, and answers how many pages it
 * merged. A write that adds GIN entries (a non-HOT update of `nodes` adds one to its trigram, labels and MAC
 * indexes) appends them to a pending list, and whichever writer fills the list past its limit merges all of it:
 * the cost of one phase lands in a later one, in lumps. The benchmark settles the lists at the end of each
 * measured phase, inside its CPU window, so each phase is charged what its own writes left behind.
 */
export async function settleGinIndexes(db: { $queryRawUnsafe<T>(query: string): Promise<T> }): Promise<number> {
  const rows = await db.$queryRawUnsafe<Array<{ pages: number }>>(
    `SELECT gin_clean_pending_list(c.oid)::int AS pages
       FROM pg_class c JOIN pg_am a ON a.oid = c.relam JOIN pg_namespace s ON s.oid = c.relnamespace
      WHERE a.amname = 'gin' AND c.relkind = 'i' AND s.nspname = current_schema()`,
  );
  return rows.reduce((sum, row) => sum + row.pages, 0);
}

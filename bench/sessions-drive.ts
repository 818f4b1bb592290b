import { percentile } from '../agent/sim/percentiles';

/** A progress line on stderr, with the time of day. */
export const log = (line: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

const STALL_MS = 120_000;

/** Runs `total` tasks on `concurrency` workers; returns latencies (ms) and the rate. */
export async function drive(total: number, concurrency: number, task: (index: number) => Promise<void>) {
  const latencies: number[] = [];
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const index = next++;
        const t0 = performance.now();
        try {
          await task(index);
          latencies.push(performance.now() - t0);
        } catch (error) {
          if (failed++ < 5) log(`  failed: ${(error as Error).message}`);
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

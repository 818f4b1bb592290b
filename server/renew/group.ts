/**
 * Groups calls that arrive together into one run (a group commit): while a run is in flight, new calls
 * queue, and the next run takes them all (up to `maxBatch`). An idle queue runs a lone call at once, so a
 * quiet system pays no waiting; a busy one pays one database round trip and one durable commit per group
 * instead of per call.
 *
 * `keysOf` names what two calls of one run must not share (a proof, a key to certify): a call whose key an
 * earlier call of the run holds waits for the next run, so one statement never writes the same row twice and
 * the later call sees the earlier one's outcome, exactly as if they had run one after the other.
 */
export class GroupRunner<I, O> {
  private readonly queue: Array<{ item: I; resolve: (value: O) => void; reject: (error: unknown) => void }> = [];
  private running = false;
  /** Runs and calls so far, for the benchmark's buckets. */
  readonly stats = { runs: 0, calls: 0 };

  constructor(
    private readonly runBatch: (items: I[]) => Promise<O[]>,
    private readonly maxBatch = 128,
    private readonly keysOf: (item: I) => readonly string[] = () => [],
  ) {}

  run(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.running) {
        this.running = true;
        // Calls that arrive in the same turn of the event loop join the first run.
        setImmediate(() => void this.drain());
      }
    });
  }

  private take() {
    const taken: typeof this.queue = [];
    const held = new Set<string>();
    for (let i = 0; i < this.queue.length && taken.length < this.maxBatch;) {
      const keys = this.keysOf(this.queue[i]!.item);
      if (keys.some((key) => held.has(key))) {
        i++;
        continue;
      }
      for (const key of keys) held.add(key);
      taken.push(...this.queue.splice(i, 1));
    }
    return taken;
  }

  private async drain() {
    const batch = this.take();
    this.stats.runs++;
    this.stats.calls += batch.length;
    try {
      const results = await this.runBatch(batch.map((entry) => entry.item));
      batch.forEach((entry, i) => entry.resolve(results[i]!));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    } finally {
      if (this.queue.length) setImmediate(() => void this.drain());
      else this.running = false;
    }
  }
}

/**
 * Calls per source address in a fixed window, in the site agent's memory (one process serves the site's
 * listeners, so nothing needs sharing). At most `maxSources` addresses are remembered; past that the one seen
 * least recently is forgotten (oldest out), so a caller cycling through addresses costs a bounded map.
 */
export class SourceRateLimit {
  readonly #counts = new Map<string, { windowStart: number; count: number }>();

  constructor(
    private readonly rule: { limit: number; windowMs: number; maxSources: number },
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one call of `source`; null when it is allowed, else the seconds until its window ends. */
  hit(source: string): number | null {
    const now = this.now();
    const seen = this.#counts.get(source);
    const current = seen && now - seen.windowStart < this.rule.windowMs ? seen : { windowStart: now, count: 0 };
    current.count += 1;
    // Re-inserted, so the Map's order is the order sources were last seen in.
    this.#counts.delete(source);
    this.#counts.set(source, current);
    while (this.#counts.size > this.rule.maxSources) this.#counts.delete(this.#counts.keys().next().value!);
    if (current.count <= this.rule.limit) return null;
    return Math.max(1, Math.ceil((current.windowStart + this.rule.windowMs - now) / 1000));
  }

  /** How many sources are remembered now. */
  get size(): number {
    return this.#counts.size;
  }
}

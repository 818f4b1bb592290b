/** Hello decisions under way at once in one API process (each gateway also relays at most 16 at once). */
export const MAX_HELLO_DECISIONS = 32;
/**
 * Hello decisions under way at once while this process's event loop lags more than {@link HELLO_LAG_MS}: the
 * console's lists and the operators' calls share that event loop, and in a reconnect storm 32 Hellos at once
 * kept it tens to hundreds of milliseconds behind, which a list of a dozen queries paid at every step. The
 * Hellos wait their turn instead (the gateway answers the retryable 503 when too many wait there).
 */
export const MAX_HELLO_DECISIONS_LAGGING = 8;
export const HELLO_LAG_MS = 40;

/**
 * The event loop's lag: how late a 50 ms timer fired, the most over its last few firings (about 250 ms),
 * measured from the first call on; 0 until then. One probe per process, unref'd.
 */
function eventLoopLag(): number {
  if (!lagProbe) {
    const probe = { samples: [0, 0, 0, 0, 0], next: 0, expected: performance.now() + 50 };
    setInterval(() => {
      const now = performance.now();
      probe.samples[probe.next++ % probe.samples.length] = Math.max(0, now - probe.expected);
      probe.expected = now + 50;
    }, 50).unref();
    lagProbe = probe;
  }
  return Math.max(...lagProbe.samples);
}
let lagProbe: { samples: number[]; next: number; expected: number } | undefined;

/**
 * At most MAX_HELLO_DECISIONS Hello decisions at once (MAX_HELLO_DECISIONS_LAGGING while the event loop lags),
 * whatever the number of gateways: the rest wait their turn here, so a reconnect storm leaves the database pool
 * and the event loop to the console's queries too.
 */
export class HelloGate {
  private decisions = 0;
  private readonly waiting: Array<() => void> = [];
  private pumpTimer: NodeJS.Timeout | null = null;

  constructor(private readonly lagMs: () => number = eventLoopLag) {}

  /** Runs `decide` when a decision slot is free. */
  async through<T>(decide: () => Promise<T>): Promise<T> {
    // A waiting Hello is started by pump(), which counts it.
    if (this.waiting.length > 0 || this.decisions >= this.limit()) {
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
        this.pump();
      });
    } else {
      this.decisions++;
    }
    try {
      return await decide();
    } finally {
      this.decisions--;
      this.pump();
    }
  }

  /** Hello decisions allowed at once now: fewer while the event loop lags. */
  private limit() {
    return this.lagMs() > HELLO_LAG_MS ? MAX_HELLO_DECISIONS_LAGGING : MAX_HELLO_DECISIONS;
  }

  /**
   * Starts waiting Hellos while the limit allows; while some still wait, looks again shortly (the limit
   * rises when the lag passes, with no decision finishing to notice it).
   */
  private pump() {
    while (this.waiting.length > 0 && this.decisions < this.limit()) {
      this.decisions++;
      this.waiting.shift()!();
    }
    if (this.waiting.length > 0 && !this.pumpTimer) {
      this.pumpTimer = setTimeout(() => {
        this.pumpTimer = null;
        this.pump();
      }, 50);
      this.pumpTimer.unref();
    }
  }
}

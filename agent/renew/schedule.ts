/** When to renew: at about 60% of the lifetime, spread ±5% so a fleet joined together does not renew together. */
export function renewalDelayMs(notBefore: Date, notAfter: Date, now: number, random: () => number = Math.random): number {
  const lifetime = notAfter.getTime() - notBefore.getTime();
  const at = notBefore.getTime() + lifetime * (0.55 + 0.1 * random());
  return Math.max(0, at - now);
}

/** Capped exponential backoff with full jitter between half and all of the step: 1 s, 2 s, 4 s … at most `capMs`. */
export function backoffMs(attempt: number, capMs = 300_000, random: () => number = Math.random): number {
  const step = Math.min(capMs, 1000 * 2 ** Math.min(attempt, 20));
  return Math.round(step * (0.5 + 0.5 * random()));
}

/** Resolves after `ms`, or at once (false) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return cancellableSleep(ms, signal).slept;
}

/**
 * {@link sleep} that its caller can also call off: `cancel()` clears the timer and the listener on `signal` and
 * resolves `slept` with false. A wait raced against something else must be cancelled when the other side wins,
 * or its timer and listener stay behind until it fires (hours, for a wait until the next renewal).
 */
export function cancellableSleep(ms: number, signal?: AbortSignal): { slept: Promise<boolean>; cancel(): void } {
  if (signal?.aborted) return { slept: Promise.resolve(false), cancel: () => {} };
  let finish: (slept: boolean) => void = () => {};
  const slept = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => finish(true), ms);
    const onAbort = () => finish(false);
    finish = (value) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      finish = () => {};
      resolve(value);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  return { slept, cancel: () => finish(false) };
}

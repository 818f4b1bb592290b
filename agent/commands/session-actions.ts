/** What a command asks of the session loop: renew now on the session, or open a new session. */
type SessionAction = 'renew' | 'refresh';

/** A request the loop took: it reports the outcome, then waits until the command was answered (bounded). */
interface TakenAction {
  readonly action: SessionAction;
  finish(outcome: { output: Record<string, unknown> } | { error: string }): Promise<void>;
}

interface Waiting {
  action: SessionAction;
  resolve(output: Record<string, unknown>): void;
  reject(error: Error): void;
}

/** The longest the loop waits for a command's answer before it closes the session the answer goes on. */
const ANSWER_WAIT_MS = 15_000;

/**
 * The hand-over between the command runner and the session loop, which alone holds the session and the
 * identity: `bcd.renew` and `trust.refresh` ask here, the loop takes the request where it waits for its next
 * renewal, does it with its own code, and reports. The loop answers on the old session before it closes it,
 * so a result arrives on the connection its command came on.
 */
export class SessionActions {
  readonly #queue: Waiting[] = [];
  #wake: (() => void) | null = null;
  readonly #answered: () => Promise<void>;

  /** `answered`: settles when the command in progress has been answered (the runner's current job). */
  constructor(answered: () => Promise<void>) {
    this.#answered = answered;
  }

  /** The runner's side: resolves with the output the loop reports, rejects with its error or when `signal` aborts. */
  request(action: SessionAction, signal?: AbortSignal): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const entry: Waiting = { action, resolve, reject };
      const abandon = () => {
        const at = this.#queue.indexOf(entry);
        if (at >= 0) this.#queue.splice(at, 1);
        reject(new Error(`the session loop did not ${action === 'renew' ? 'renew' : 'open a new session'} in time`));
      };
      if (signal?.aborted) return abandon();
      signal?.addEventListener('abort', abandon, { once: true });
      entry.resolve = (output) => (signal?.removeEventListener('abort', abandon), resolve(output));
      entry.reject = (error) => (signal?.removeEventListener('abort', abandon), reject(error));
      this.#queue.push(entry);
      this.#wake?.();
      this.#wake = null;
    });
  }

  /**
   * The loop's side: resolves when a request waits. Each call replaces the previous call's promise (which then
   * never settles and is dropped), so a loop that waits again and again holds one.
   */
  wait(): Promise<void> {
    if (this.#queue.length > 0) return Promise.resolve();
    return new Promise((resolve) => (this.#wake = resolve));
  }

  /** The loop's side: the oldest waiting request, if any. */
  take(): TakenAction | undefined {
    const entry = this.#queue.shift();
    if (!entry) return undefined;
    return {
      action: entry.action,
      finish: async (outcome) => {
        const answered = this.#answered();
        if ('error' in outcome) entry.reject(new Error(outcome.error));
        else entry.resolve(outcome.output);
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([answered, new Promise((resolve) => (timer = setTimeout(resolve, ANSWER_WAIT_MS)))]);
        clearTimeout(timer);
      },
    };
  }
}

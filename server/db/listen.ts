import pg from 'pg';
import { logError } from '../log';

/**
 * One LISTEN connection per channel and process, shared by every subscriber. Writers NOTIFY in the
 * transaction that made the change, whichever instance they run in, so a subscriber here also sees the
 * changes another instance made. The connection opens with the first subscriber and reopens after a failure.
 * `parse` turns a payload into a change, or null for one that is not (it is then dropped).
 */
export class ChannelListener<T> {
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private readonly listeners = new Set<(change: T) => void>();

  constructor(
    private readonly databaseUrl: string,
    private readonly channel: string,
    private readonly parse: (payload: string) => T | null,
  ) {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
  }

  /** Starts delivering changes to `listener`; resolves once LISTEN is in place. Returns the unsubscribe. */
  async subscribe(listener: (change: T) => void): Promise<() => void> {
    this.listeners.add(listener);
    await this.connect();
    return () => void this.listeners.delete(listener);
  }

  private connect(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.connecting ??= (async () => {
      const client = new pg.Client({ connectionString: this.databaseUrl });
      client.on('notification', (message) => {
        const change = this.parse(message.payload ?? '');
        if (change === null) return;
        for (const listener of this.listeners) listener(change);
      });
      client.on('error', (error) => {
        logError(`LISTEN ${this.channel} connection failed`, error);
        this.client = null;
        void client.end().catch(() => {});
      });
      try {
        await client.connect();
        await client.query(`LISTEN ${this.channel}`);
        this.client = client;
      } finally {
        this.connecting = null;
      }
    })();
    return this.connecting;
  }

  async close() {
    this.listeners.clear();
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }
}

/**
 * The changes `accept` lets through, as an async iterable that ends with `signal`. Changes that arrive while
 * the consumer is busy are queued, so none is lost between two reads.
 */
export async function* watchChannel<T>(
  listener: ChannelListener<T>,
  accept: (change: T) => boolean,
  signal: AbortSignal | undefined,
): AsyncGenerator<T> {
  const queue: T[] = [];
  let wake: (() => void) | null = null;
  const unsubscribe = await listener.subscribe((change) => {
    if (!accept(change)) return;
    queue.push(change);
    wake?.();
  });
  const aborted = new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true }));
  try {
    while (!signal?.aborted) {
      if (!queue.length) await Promise.race([new Promise<void>((resolve) => (wake = resolve)), aborted]);
      wake = null;
      while (queue.length) yield queue.shift()!;
    }
  } finally {
    unsubscribe();
  }
}

/** A JSON payload read with `schema`, or null. */
export function jsonPayload<T>(schema: { safeParse(value: unknown): { success: true; data: T } | { success: false } }) {
  return (payload: string): T | null => {
    let value: unknown;
    try {
      value = JSON.parse(payload);
    } catch {
      return null;
    }
    const parsed = schema.safeParse(value);
    return parsed.success ? parsed.data : null;
  };
}

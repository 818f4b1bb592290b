import pg from 'pg';
import { isStopping, logWarn } from '../log';

/** The first wait before reopening a failed LISTEN connection; it doubles up to RECONNECT_MAX_MS. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 30_000;

/**
 * One LISTEN connection per channel and process, shared by every subscriber. Writers NOTIFY in the
 * transaction that made the change, whichever instance they run in, so a subscriber here also sees the
 * changes another instance made. The connection opens with the first subscriber; when it fails (a database
 * restart, a failover, an idle connection cut by the network) it reopens by itself with a doubling wait while
 * anyone is subscribed. Notifications sent while it was down are lost, so nothing may depend on them alone
 * (webhook deliveries and session leases also have periodic sweeps). `parse` turns a payload into a change, or null for one that is not (it is then dropped).
 */
export class ChannelListener<T> {
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private readonly listeners = new Set<(change: T) => void>();
  private closed = false;
  private retry: NodeJS.Timeout | null = null;
  private retryMs = RECONNECT_FIRST_MS;
  /** Times the connection was reopened after a failure (for tests and diagnostics). */
  reconnects = 0;

  constructor(
    private readonly databaseUrl: string,
    private readonly channel: string,
    private readonly parse: (payload: string) => T | null,
  ) {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
  }

  /** Starts delivering changes to `listener`; resolves once LISTEN is in place. Returns the unsubscribe. */
  async subscribe(listener: (change: T) => void): Promise<() => void> {
    this.closed = false;
    this.listeners.add(listener);
    try {
      await this.connect();
    } catch (error) {
      this.listeners.delete(listener);
      throw error;
    }
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
        if (this.client === client) this.client = null;
        void client.end().catch(() => {});
        this.failed(error);
      });
      try {
        await client.connect();
        await client.query(`LISTEN ${this.channel}`);
        if (this.closed) {
          void client.end().catch(() => {});
          return;
        }
        this.client = client;
        this.retryMs = RECONNECT_FIRST_MS;
      } catch (error) {
        void client.end().catch(() => {});
        throw error;
      } finally {
        this.connecting = null;
      }
    })();
    return this.connecting;
  }

  /** The connection broke: reopen it after a wait while anyone listens, and say so unless the process is stopping. */
  private failed(error: unknown) {
    if (this.closed || this.listeners.size === 0 || this.retry) return;
    if (!isStopping())
      logWarn(`LISTEN ${this.channel} connection lost; reopening`, {
        error: error instanceof Error ? error.message : String(error),
        retryInMs: this.retryMs,
      });
    this.retry = setTimeout(() => {
      this.retry = null;
      if (this.closed || this.listeners.size === 0) return;
      this.connect().then(
        () => {
          this.reconnects += 1;
          if (!isStopping()) logWarn(`LISTEN ${this.channel} connection reopened`);
        },
        (reason: unknown) => {
          this.retryMs = Math.min(this.retryMs * 2, RECONNECT_MAX_MS);
          this.failed(reason);
        },
      );
    }, this.retryMs);
    this.retry.unref();
  }

  async close() {
    this.closed = true;
    this.listeners.clear();
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
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

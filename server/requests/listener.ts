import pg from 'pg';
import { z } from 'zod';
import { logError } from '../log';
import { JOIN_REQUESTS_CHANNEL } from '../join/attestors/discovery-sql';

/** What every change of a queue announces; subscribers re-read the requests it names. */
export const joinRequestChange = z.object({ tenantId: z.string(), siteId: z.string(), requestIds: z.array(z.string()) });
export type JoinRequestChange = z.infer<typeof joinRequestChange>;

type Listener = (change: JoinRequestChange) => void;

/**
 * One LISTEN connection per process, shared by every subscriber: changes are written and NOTIFY'd in the
 * same transaction by whichever instance recorded or decided them, so a subscriber here sees another
 * instance's changes too. The connection is opened with the first subscriber and reopened after a failure.
 */
export class JoinRequestListener {
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private readonly listeners = new Set<Listener>();

  constructor(private readonly databaseUrl: string) {}

  /** Starts delivering changes to `listener`; resolves once LISTEN is in place. Returns the unsubscribe. */
  async subscribe(listener: Listener): Promise<() => void> {
    this.listeners.add(listener);
    await this.connect();
    return () => void this.listeners.delete(listener);
  }

  private connect(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.connecting ??= (async () => {
      const client = new pg.Client({ connectionString: this.databaseUrl });
      client.on('notification', (message) => {
        const parsed = joinRequestChange.safeParse(safeJson(message.payload));
        if (!parsed.success) return;
        for (const listener of this.listeners) listener(parsed.data);
      });
      client.on('error', (error) => {
        logError('join request listener connection failed', error);
        this.client = null;
        void client.end().catch(() => {});
      });
      try {
        await client.connect();
        await client.query(`LISTEN ${JOIN_REQUESTS_CHANNEL}`);
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

function safeJson(text: string | undefined): unknown {
  try {
    return JSON.parse(text ?? '');
  } catch {
    return null;
  }
}

const globalForListener = globalThis as unknown as { joinRequestListener?: JoinRequestListener };

/** The process's listener on DATABASE_URL. */
export function processJoinRequestListener(): JoinRequestListener {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set');
  return (globalForListener.joinRequestListener ??= new JoinRequestListener(url));
}

/**
 * The changes of one site's queue for one tenant, as an async iterable that ends with `signal`. Changes
 * that arrive while the consumer is busy are queued, so none is lost between two reads.
 */
export async function* watchJoinRequests(
  listener: JoinRequestListener,
  scope: { tenantId: string; siteId: string },
  signal: AbortSignal | undefined,
): AsyncGenerator<JoinRequestChange> {
  const queue: JoinRequestChange[] = [];
  let wake: (() => void) | null = null;
  const unsubscribe = await listener.subscribe((change) => {
    if (change.tenantId !== scope.tenantId || change.siteId !== scope.siteId) return;
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

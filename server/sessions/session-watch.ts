import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { z } from 'zod';
import { ChannelListener, jsonPayload } from '../db/listen';
import { sseEvent } from '../../protocol/session-wire';

/** The channel the session-end triggers announce on (migration 20261202160000). */
const SESSIONS_CHANNEL = 'compute_sessions';

/** Gateways that hold a session whose certificate just stopped being valid: they make a lease call now. */
const sessionsChange = z.object({ gatewayIds: z.array(z.string()), everyGateway: z.boolean().optional() });
export type SessionsChange = z.infer<typeof sessionsChange>;

export class SessionsListener extends ChannelListener<SessionsChange> {
  private readonly local = new Set<(change: SessionsChange) => void>();

  constructor(databaseUrl: string) {
    super(databaseUrl, SESSIONS_CHANNEL, jsonPayload(sessionsChange));
  }

  override async subscribe(listener: (change: SessionsChange) => void): Promise<() => void> {
    const unsubscribe = await super.subscribe(listener);
    this.local.add(listener);
    return () => {
      this.local.delete(listener);
      unsubscribe();
    };
  }

  /**
   * Asks every gateway watching this process for a lease call now (the trust set changed here: their
   * sessions' `trust` events come with the answers). In process only: every instance follows the change on
   * its own and tells its own watchers.
   */
  announceToEveryGateway(): void {
    for (const listener of this.local) listener({ gatewayIds: [], everyGateway: true });
  }
}

/** How often an idle watch stream carries a comment, so no proxy or idle timer in between closes it. */
const WATCH_PING_MS = 15_000;

/**
 * A gateway's watch stream (Server-Sent Events): `ready` once LISTEN is in place, then `refresh` each time a
 * transaction ended a session this gateway holds (revoked, reclaimed, deleted, expired earlier), and when this
 * process's trust set changed. A `refresh`
 * names nothing: the gateway answers it with a lease call, which decides again from the committed rows which
 * sessions end, so the stream carries no authority and a lost announcement costs only time (the lease call's
 * own schedule still finds the session). The stream ends when the caller goes away (cancel).
 */
export function sessionWatchResponse(listener: ChannelListener<SessionsChange>, gatewayId: string): Response {
  const encoder = new TextEncoder();
  let cleanup = () => {};
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (text: string) => {
        if (!cancelled) controller.enqueue(encoder.encode(text));
      };
      const ping = setInterval(() => send(': ping\n\n'), WATCH_PING_MS);
      ping.unref();
      let unsubscribe: () => void;
      try {
        unsubscribe = await listener.subscribe((change) => {
          if (change.everyGateway || change.gatewayIds.includes(gatewayId)) send(sseEvent('refresh', {}));
        });
      } catch {
        // No LISTEN connection (the database is away): the gateway reconnects, and polls meanwhile.
        clearInterval(ping);
        controller.error(new Error('no LISTEN connection'));
        return;
      }
      cleanup = () => {
        clearInterval(ping);
        unsubscribe();
      };
      if (cancelled) cleanup();
      else send(sseEvent('ready', {}));
    },
    cancel() {
      cancelled = true;
      cleanup();
    },
  });
  return new Response(stream, { status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' } });
}

const openWatches = new Set<ServerResponse>();

/**
 * Ends every watch stream this process serves (they never end by themselves): a server's stop calls it before
 * `close()`, which would otherwise wait for the gateways. Each gateway reconnects, to another instance or later.
 */
export function endSessionWatches(): void {
  for (const res of openWatches) res.destroy();
}

/** Writes a streamed answer to a Node response; the stream is cancelled when the response closes. */
export function pipeWatchResponse(response: Response, res: ServerResponse): void {
  openWatches.add(res);
  res.on('close', () => openWatches.delete(res));
  res.writeHead(response.status, Object.fromEntries(response.headers));
  const body = Readable.fromWeb(response.body as unknown as NodeReadableStream<Uint8Array>);
  body.on('error', () => res.destroy());
  res.on('close', () => body.destroy());
  body.pipe(res);
}

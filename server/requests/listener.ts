import { z } from 'zod';
import { ChannelListener, jsonPayload, watchChannel } from '../db/listen';
import { JOIN_REQUESTS_CHANNEL } from './request-store-sql';

/** What every change of a queue announces; subscribers re-read the requests it names. */
const joinRequestChange = z.object({ tenantId: z.string(), siteId: z.string(), requestIds: z.array(z.string()) });
export type JoinRequestChange = z.infer<typeof joinRequestChange>;

/**
 * The process's LISTEN on the join-request channel: changes are written and NOTIFY'd in the same
 * transaction by whichever instance recorded or decided them (server/db/listen.ts).
 */
export class JoinRequestListener extends ChannelListener<JoinRequestChange> {
  constructor(databaseUrl: string) {
    super(databaseUrl, JOIN_REQUESTS_CHANNEL, jsonPayload(joinRequestChange));
  }
}

/** The changes of one site's queue for one tenant, as an async iterable that ends with `signal`. */
export function watchJoinRequests(
  listener: JoinRequestListener,
  scope: { tenantId: string; siteId: string },
  signal: AbortSignal | undefined,
): AsyncGenerator<JoinRequestChange> {
  return watchChannel(listener, (change) => change.tenantId === scope.tenantId && change.siteId === scope.siteId, signal);
}

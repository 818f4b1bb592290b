import { z } from 'zod';
import { ChannelListener, jsonPayload, watchChannel } from '../db/listen';

/** The channel the `events_notify` trigger announces new events on (migration 20261201050000). */
const EVENTS_CHANNEL = 'compute_events';

/** A tenant has new events; subscribers re-read their lists. */
const eventsChange = z.object({ tenantId: z.string() });
export type EventsChange = z.infer<typeof eventsChange>;

export class EventsListener extends ChannelListener<EventsChange> {
  constructor(databaseUrl: string) {
    super(databaseUrl, EVENTS_CHANNEL, jsonPayload(eventsChange));
  }
}

/** One tenant's announcements, as an async iterable that ends with `signal`. */
export function watchEvents(listener: EventsListener, tenantId: string, signal: AbortSignal | undefined): AsyncGenerator<EventsChange> {
  return watchChannel(listener, (change) => change.tenantId === tenantId, signal);
}

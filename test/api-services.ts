import type { ApiServices } from '../server/api/trpc';
import { EventsListener } from '../server/events/listener';
import { JoinRequestListener } from '../server/requests/listener';
import { testDatabaseUrl } from './db';

let shared: ApiServices | undefined;

/**
 * The API services a test hands its context for live streams, as server/boot does for a request: LISTEN
 * connections on the test database, opened on first use and shared by the tests of one worker.
 */
export function testApiServices(): ApiServices {
  if (!shared) {
    const url = testDatabaseUrl();
    let events: EventsListener | undefined;
    let joinRequests: JoinRequestListener | undefined;
    shared = {
      eventsListener: () => (events ??= new EventsListener(url)),
      joinRequestListener: () => (joinRequests ??= new JoinRequestListener(url)),
    };
  }
  return shared;
}

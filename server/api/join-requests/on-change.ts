import { streamProcedure } from '../trpc';
import { guardedStream } from '../live-streams';
import { loadPool } from '../../pools/pools';
import { watchJoinRequests } from '../../requests/listener';
import { getJoinRequestInput, type JoinRequestChange } from '../../../protocol/api/join-request-schemas';

const onChangeInput = getJoinRequestInput.omit({ requestId: true });

/**
 * `joinRequests.onChange`: every change of the pool's queue (its site's requests and its own), pushed over
 * server-sent events (`httpSubscriptionLink`) from PostgreSQL LISTEN/NOTIFY. Each event names the requests
 * that changed; the subscriber re-reads them with `list` or `get`. The caller is decided again while the
 * stream runs (server/api/live-streams.ts): a revoked key, an ended session or a lost membership ends it.
 */
export const onJoinRequestChange = streamProcedure('compute:join-tokens:read')
  .input(onChangeInput)
  .subscription(async function* ({ ctx, input, signal }) {
    const changes = guardedStream({
      ctx,
      signal,
      authorize: (principal) => loadPool(ctx.db, principal, 'compute:join-tokens:read', input),
      open: (listeners, pool, stop) =>
        watchJoinRequests(listeners.joinRequestListener(), { tenantId: pool.ownerTenantId, siteId: pool.siteId }, stop),
    });
    for await (const change of changes) yield { siteId: change.siteId, requestIds: change.requestIds } satisfies JoinRequestChange;
  });

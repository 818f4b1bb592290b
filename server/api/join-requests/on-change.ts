import { requirePermission } from '../trpc';
import { loadPool } from '../../pools/pools';
import { processJoinRequestListener, watchJoinRequests } from '../../requests/listener';
import { getJoinRequestInput } from '../../requests/schemas';

const onChangeInput = getJoinRequestInput.omit({ requestId: true });

/**
 * `joinRequests.onChange`: every change of the pool's queue (its site's requests and its own), pushed over
 * server-sent events (`httpSubscriptionLink`) from PostgreSQL LISTEN/NOTIFY. Each event names the requests
 * that changed; the subscriber re-reads them with `list` or `get`.
 */
export const onJoinRequestChange = requirePermission('compute:join-tokens:read')
  .input(onChangeInput)
  .subscription(async function* ({ ctx, input, signal }) {
    const pool = await loadPool(ctx.db, ctx.principal, 'compute:join-tokens:read', input);
    for await (const change of watchJoinRequests(processJoinRequestListener(), { tenantId: pool.ownerTenantId, siteId: pool.siteId }, signal)) {
      yield { siteId: change.siteId, requestIds: change.requestIds };
    }
  });

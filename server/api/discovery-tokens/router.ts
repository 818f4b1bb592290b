import { requirePermission, router } from '../trpc';
import { createDiscoveryToken, createDiscoveryTokenInput } from '../../tokens/site-scoped';
import { createdJoinToken } from '../../../protocol/api/token-schemas';

/** Discovery tokens: minted by a site's boot step, one per PXE lease, bound to its MAC. */
export const discoveryTokensRouter = router({
  create: requirePermission('compute:sites:manage')
    .input(createDiscoveryTokenInput)
    .output(createdJoinToken)
    .mutation(({ ctx, input }) => createDiscoveryToken(ctx.db, ctx.principal, input)),
});

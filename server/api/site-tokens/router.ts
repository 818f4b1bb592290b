import { requirePermission, router } from '../trpc';
import { createSiteToken, createSiteTokenInput } from '../../tokens/site-scoped';
import { createdJoinToken } from '../../../protocol/api/token-schemas';

/** Site tokens: admit `bcd site` agents into one site, at most 16 uses. */
export const siteTokensRouter = router({
  create: requirePermission('compute:sites:manage')
    .input(createSiteTokenInput)
    .output(createdJoinToken)
    .mutation(({ ctx, input }) => createSiteToken(ctx.db, ctx.principal, input)),
});

import { requirePermission, router } from '../trpc';
import { getOverview } from '../../overview/overview';
import { overview, overviewInput } from '../../overview/schemas';

export const overviewRouter = router({
  get: requirePermission('compute:pools:read')
    .input(overviewInput)
    .output(overview)
    .query(({ ctx, input }) => getOverview(ctx.db, ctx.principal, input)),
});

import { requirePermission, router } from '../trpc';
import { archiveSite, createSite, createSiteInput, getSite, listSites, listSitesInput, siteRefInput } from '../../sites/sites';
import { siteList, siteRecord } from '../../../protocol/api/site-schemas';
import { updateSiteInput } from '../../../protocol/api/site-schemas';
import { updateSite } from '../../sites/update';

export const sitesRouter = router({
  create: requirePermission('compute:sites:manage')
    .input(createSiteInput)
    .output(siteRecord)
    .mutation(({ ctx, input }) => createSite(ctx.db, ctx.principal, input)),
  list: requirePermission('compute:sites:read')
    .input(listSitesInput)
    .output(siteList)
    .query(async ({ ctx, input }) => ({ items: await listSites(ctx.db, ctx.principal, input) })),
  get: requirePermission('compute:sites:read')
    .input(siteRefInput)
    .output(siteRecord)
    .query(({ ctx, input }) => getSite(ctx.db, ctx.principal, input)),
  archive: requirePermission('compute:sites:manage')
    .input(siteRefInput)
    .output(siteRecord)
    .mutation(({ ctx, input }) => archiveSite(ctx.db, ctx.principal, input)),
  update: requirePermission('compute:sites:manage')
    .input(updateSiteInput)
    .output(siteRecord)
    .mutation(({ ctx, input }) => updateSite(ctx.db, ctx.principal, input)),
});

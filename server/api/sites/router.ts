import { z } from 'zod';
import { requirePermission, router } from '../trpc';
import { archiveSite, createSite, createSiteInput, getSite, listSites, listSitesInput, siteRecord, siteRefInput } from '../../sites/sites';
import { updateSite, updateSiteInput } from '../../sites/update';

export const sitesRouter = router({
  create: requirePermission('compute:sites:manage')
    .input(createSiteInput)
    .output(siteRecord)
    .mutation(({ ctx, input }) => createSite(ctx.db, ctx.principal, input)),
  list: requirePermission('compute:sites:read')
    .input(listSitesInput)
    .output(z.object({ items: z.array(siteRecord) }))
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

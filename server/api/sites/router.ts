import { router } from '../trpc';
import { domainList, domainMutation, domainQuery } from '../domain-procedure';
import { archiveSite, createSite, createSiteInput, getSite, listSites, listSitesInput, siteRefInput } from '../../sites/sites';
import { siteList, siteRecord } from '../../../protocol/api/site-schemas';
import { updateSiteInput } from '../../../protocol/api/site-schemas';
import { updateSite } from '../../sites/update';

export const sitesRouter = router({
  create: domainMutation('compute:sites:manage', createSiteInput, siteRecord, createSite),
  list: domainList('compute:sites:read', listSitesInput, siteList, listSites),
  get: domainQuery('compute:sites:read', siteRefInput, siteRecord, getSite),
  archive: domainMutation('compute:sites:manage', siteRefInput, siteRecord, archiveSite),
  update: domainMutation('compute:sites:manage', updateSiteInput, siteRecord, updateSite),
});

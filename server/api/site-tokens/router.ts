import { router } from '../trpc';
import { domainMutation } from '../domain-procedure';
import { createSiteToken, createSiteTokenInput } from '../../tokens/site-scoped';
import { createdJoinToken } from '../../../protocol/api/token-schemas';

/** Site tokens: admit `bcd site` agents into one site, at most 16 uses. */
export const siteTokensRouter = router({
  create: domainMutation('compute:sites:manage', createSiteTokenInput, createdJoinToken, createSiteToken),
});

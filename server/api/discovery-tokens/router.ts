import { router } from '../trpc';
import { domainMutation } from '../domain-procedure';
import { createDiscoveryToken, createDiscoveryTokenInput } from '../../tokens/site-scoped';
import { createdJoinToken } from '../../../protocol/api/token-schemas';

/** Discovery tokens: minted by a site's boot step, one per PXE lease, bound to its MAC. */
export const discoveryTokensRouter = router({
  create: domainMutation('compute:sites:manage', createDiscoveryTokenInput, createdJoinToken, createDiscoveryToken),
});

import { router } from '../trpc';
import { domainQuery } from '../domain-procedure';
import { getOverview } from '../../overview/overview';
import { overview, overviewInput } from '../../overview/schemas';

export const overviewRouter = router({
  get: domainQuery('compute:pools:read', overviewInput, overview, getOverview),
});

import { router } from '../trpc';
import { domainQuery } from '../domain-procedure';
import { auditPage, listAudit, listAuditInput } from '../../events/list-audit';
import { auditFacets, auditFacetsInput, listAuditFacets } from '../../events/audit-facets';

export const auditRouter = router({
  list: domainQuery('compute:audit:read', listAuditInput, auditPage, listAudit),
  facets: domainQuery('compute:audit:read', auditFacetsInput, auditFacets, listAuditFacets),
});

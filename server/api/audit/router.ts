import { requirePermission, router } from '../trpc';
import { auditPage, listAudit, listAuditInput } from '../../events/list-audit';
import { auditFacets, auditFacetsInput, listAuditFacets } from '../../events/audit-facets';

export const auditRouter = router({
  list: requirePermission('compute:audit:read')
    .input(listAuditInput)
    .output(auditPage)
    .query(({ ctx, input }) => listAudit(ctx.db, ctx.principal, input)),
  facets: requirePermission('compute:audit:read')
    .input(auditFacetsInput)
    .output(auditFacets)
    .query(({ ctx, input }) => listAuditFacets(ctx.db, ctx.principal, input)),
});

import { requirePermission, router } from '../trpc';
import { auditPage, listAudit, listAuditInput } from '../../events/list-audit';

export const auditRouter = router({
  list: requirePermission('compute:audit:read')
    .input(listAuditInput)
    .output(auditPage)
    .query(({ ctx, input }) => listAudit(ctx.db, ctx.principal, input)),
});

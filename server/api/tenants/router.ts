import { z } from 'zod';
import { requirePermission, router } from '../trpc';
import { domainMutation } from '../domain-procedure';
import { createTenant, createTenantInput, listTenants } from '../../tenants/tenants';
import { tenantList, tenantRecord } from '../../../protocol/api/tenant-schemas';

export const tenantsRouter = router({
  create: domainMutation('compute:tenants:manage', createTenantInput, tenantRecord, createTenant),
  list: requirePermission('compute:tenants:read')
    .input(z.object({}).optional())
    .output(tenantList)
    .query(async ({ ctx }) => ({ items: await listTenants(ctx.db, ctx.principal) })),
});

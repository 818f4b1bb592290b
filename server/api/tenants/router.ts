import { z } from 'zod';
import { requirePermission, router } from '../trpc';
import { createTenant, createTenantInput, listTenants } from '../../tenants/tenants';
import { tenantList, tenantRecord } from '../../../protocol/api/tenant-schemas';

export const tenantsRouter = router({
  create: requirePermission('compute:tenants:manage')
    .input(createTenantInput)
    .output(tenantRecord)
    .mutation(({ ctx, input }) => createTenant(ctx.db, ctx.principal, input)),
  list: requirePermission('compute:tenants:read')
    .input(z.object({}).optional())
    .output(tenantList)
    .query(async ({ ctx }) => ({ items: await listTenants(ctx.db, ctx.principal) })),
});

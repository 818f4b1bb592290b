import { z } from 'zod';
import { ROLES } from './permissions';

/** A tenant as the API answers it (`tenants.list`, `tenants.create`). */
export const tenantRecord = z.object({
  id: z.string(),
  name: z.string(),
  isRoot: z.boolean(),
  createdAt: z.string(),
  /** Whether the caller belongs to the tenant (and so can act in it), not only see it. */
  isMember: z.boolean(),
  /** The caller's role in the tenant, so the console can leave out controls the role may not use (the server refuses them anyway). */
  role: z.enum(ROLES).nullable(),
});
export type TenantRecord = z.infer<typeof tenantRecord>;

export const tenantList = z.object({ items: z.array(tenantRecord) });

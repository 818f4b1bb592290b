import { roleAllows, type Action } from '@/protocol/api/permissions';
import type { Tenant } from './api-types';

/**
 * Whether the operator's role in `tenant` allows `action`, to leave out controls it could not use. Only
 * presentation: the server decides every call again and refuses what the role does not allow.
 */
export function can(tenant: Pick<Tenant, 'role'>, action: Action): boolean {
  return tenant.role !== null && roleAllows(tenant.role, action);
}

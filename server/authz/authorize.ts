import { DomainError } from '../../protocol/errors';
import type { Tx } from '../db/client';
import { roleAllows, type Action } from '../../protocol/api/permissions';
import type { Principal } from './principal';

const RESOURCE_LABEL: Record<string, string> = {
  'compute-tenant': 'Tenant',
  'compute-site': 'Site',
  'compute-pool': 'Pool',
  'compute-node': 'Node',
  'compute-api-key': 'API key',
};

export const resource = {
  tenant: (id: string) => `compute-tenant/${id}`,
  site: (id: string) => `compute-site/${id}`,
  pool: (id: string) => `compute-pool/${id}`,
  node: (id: string) => `compute-node/${id}`,
};

/** Records which tenant owns a resource; written in the transaction that creates it. */
export async function projectResource(tx: Tx, resourceName: string, tenantId: string): Promise<void> {
  const kind = resourceName.slice(0, resourceName.indexOf('/'));
  await tx.authzResource.upsert({
    where: { resource: resourceName },
    create: { resource: resourceName, tenantId, kind },
    update: { tenantId },
  });
}

/**
 * Decides `action` on `resourceName` for the caller and returns the owner tenant. A caller outside the
 * owner tenant (or asking for a resource that does not exist) gets NOT_FOUND, never a hint that it exists;
 * a member whose role lacks the action gets ACCESS_DENIED.
 */
export async function authorize(tx: Tx, principal: Principal, action: Action, resourceName: string): Promise<string> {
  const slash = resourceName.indexOf('/');
  const label = RESOURCE_LABEL[resourceName.slice(0, slash)] ?? 'Resource';
  const id = resourceName.slice(slash + 1);
  const row = id ? await tx.authzResource.findUnique({ where: { resource: resourceName } }) : null;
  const role = row ? principal.memberships.get(row.tenantId) : undefined;
  if (!row || !role) throw new DomainError('NOT_FOUND', `${label} ${id} not found`);
  if (!roleAllows(role, action)) {
    throw new DomainError('ACCESS_DENIED', `Your role (${role}) does not allow ${action} on ${resourceName}`);
  }
  return row.tenantId;
}

import { DomainError } from '../../../protocol/errors';
import { getRootTenant } from '../../tenants/tenants';
import type { Action } from '../../../protocol/api/permissions';
import { requirePermission } from '../trpc';

/**
 * A procedure decided as `action`, for admins of the root tenant only (the PKI is the deployment's, not a tenant's). Decided before
 * the input is parsed, so any other caller learns nothing from the answer (not even whether a `kind` exists);
 * the domain function checks the caller again.
 */
export function rootAdminProcedure(action: Extract<Action, `compute:pki:${string}`>) {
  return requirePermission(action).use(async ({ ctx, next }) => {
    const root = await getRootTenant(ctx.db);
    if (!root || ctx.principal.memberships.get(root.id) !== 'admin') {
      throw new DomainError('ACCESS_DENIED', 'Only admins of the root tenant manage the PKI');
    }
    return next();
  });
}

/**
 * BETTER_COMPUTE_SECRET of this API process, which the PKI bundle is opened and sealed again under. Read per
 * call and never put in an answer or a log line.
 */
export function pkiSecret(env: Record<string, string | undefined> = process.env): string {
  const secret = env.BETTER_COMPUTE_SECRET;
  if (!secret) throw new DomainError('INVALID_CONFIG', 'BETTER_COMPUTE_SECRET is not set on the server: the PKI bundle cannot be sealed');
  return secret;
}

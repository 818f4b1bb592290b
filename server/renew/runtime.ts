import { getPgPool } from '../db/pg';
import { getDb } from '../db/client';
import { loadPkiRuntime } from '../join/runtime';
import { getRootTenant } from '../tenants/tenants';
import { RenewService } from './renew-service';

const globalForRenew = globalThis as unknown as { renewService?: RenewService; renewRootTenantId?: string };

async function loadRootTenantId(): Promise<string | null> {
  if (globalForRenew.renewRootTenantId) return globalForRenew.renewRootTenantId;
  const root = await getRootTenant(getDb());
  if (root) globalForRenew.renewRootTenantId = root.id;
  return root?.id ?? null;
}

/** The process's RenewService, on DATABASE_URL, with JoinService's keys (it is JoinService's renewal half). */
export function getRenewService(): RenewService {
  return (globalForRenew.renewService ??= new RenewService({
    pool: getPgPool(),
    loadRuntime: () => loadPkiRuntime(),
    loadRootTenantId,
    certTtlSeconds: process.env.BETTER_COMPUTE_CERT_TTL_SECONDS ? Number(process.env.BETTER_COMPUTE_CERT_TTL_SECONDS) : undefined,
  }));
}
